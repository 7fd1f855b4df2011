// Which HAMi-core container folders a pod view proves unused: only those of pods absent from
// (or ended in) a complete view that is fresh enough for the folder's age; never a guess.

#include "core/node/hami_core_folders.h"

#include <gtest/gtest.h>

namespace tessera::node {
namespace {

model::Pod PodWith(const std::string& uid, const std::string& phase = "Running") {
  model::Pod p;
  p.name = "p-" + uid;
  p.uid = uid;
  p.phase = phase;
  return p;
}

TEST(HamiCoreFoldersTest, FolderNamesAreUidThenContainer) {
  EXPECT_EQ(ContainerFolderName("0f1e-aa", "main"), "0f1e-aa_main");
  EXPECT_EQ(FolderPodUid("0f1e-aa_main"), "0f1e-aa");
  EXPECT_FALSE(FolderPodUid("lost+found").has_value());
  EXPECT_FALSE(FolderPodUid("_main").has_value());
  EXPECT_FALSE(FolderPodUid("uid_").has_value());
}

TEST(HamiCoreFoldersTest, OnlyFoldersOfPodsProvenGoneAreRemoved) {
  const std::vector<ContainerFolder> folders = {
      {"live_main", 1000},      // its pod runs
      {"gone_main", 1000},      // its pod is not on the node
      {"ended_main", 1000},     // its pod Succeeded
      {"young_main", 9500},     // made after the view could have seen its pod
      {"not-ours", 1000},       // not "<uid>_<container>"
      {"live_sidecar", 1000}};  // another container of the live pod
  const auto removed = ContainerFoldersToRemove(
      folders, {PodWith("live"), PodWith("ended", "Succeeded")}, /*view_fresh_ms=*/10000,
      /*grace_ms=*/1000);
  EXPECT_EQ(removed, (std::vector<std::string>{"gone_main", "ended_main"}));
}

// A view that stopped (a dead watch) at 2000 proves nothing about folders made after 1000.
TEST(HamiCoreFoldersTest, AStaleViewProvesNothingAboutNewerFolders) {
  EXPECT_TRUE(ContainerFoldersToRemove({{"new_main", 1500}}, {}, 2000, 1000).empty());
  EXPECT_EQ(ContainerFoldersToRemove({{"old_main", 500}}, {}, 2000, 1000),
            (std::vector<std::string>{"old_main"}));
}

}  // namespace
}  // namespace tessera::node
