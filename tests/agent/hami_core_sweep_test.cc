// The reconcile's sweep of HAMi-core folders: those of pods a complete, fresh view proves gone
// are removed; a failed listing or removal is reported and touches nothing else.

#include "agent/hami_core_sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace tessera {
namespace {

struct MemoryFolders : agent::HamiCoreFolders {
  std::map<std::string, int64_t> folders;  // name -> modified
  std::string list_error;
  std::string remove_error;
  Status Prepare(const std::string& uid, const std::string& container) override {
    folders[node::ContainerFolderName(uid, container)] = 0;
    return Status::Ok();
  }
  Result<std::vector<node::ContainerFolder>> List() override {
    if (!list_error.empty()) return Error{list_error};
    std::vector<node::ContainerFolder> out;
    for (const auto& [name, modified] : folders) out.push_back({name, modified});
    return out;
  }
  Status Remove(const std::string& name) override {
    if (!remove_error.empty()) return Error{remove_error};
    folders.erase(name);
    return Status::Ok();
  }
};

model::Pod Running(const std::string& uid) {
  model::Pod p;
  p.name = uid;
  p.uid = uid;
  p.phase = "Running";
  return p;
}

TEST(HamiCoreSweepTest, TheFoldersOfPodsGoneAreRemovedOthersKept) {
  MemoryFolders folders;
  folders.folders = {{"a_main", 1000}, {"b_main", 1000}, {"c_main", 9800}};
  auto sweep = agent::SweepHamiCoreFolders(folders, {{Running("a")}, 10000}, 1000);
  EXPECT_EQ(sweep.removed, (std::vector<std::string>{"b_main"}));
  EXPECT_TRUE(sweep.errors.empty());
  EXPECT_EQ(folders.folders.count("a_main"), 1U);
  EXPECT_EQ(folders.folders.count("c_main"), 1U);  // younger than the view can prove
}

TEST(HamiCoreSweepTest, FailuresAreReportedAndRemoveNothing) {
  MemoryFolders folders;
  folders.folders = {{"b_main", 1000}};
  folders.list_error = "/usr/local/vgpu/containers: Permission denied";
  auto sweep = agent::SweepHamiCoreFolders(folders, {{}, 10000}, 1000);
  ASSERT_EQ(sweep.errors.size(), 1U);
  EXPECT_NE(sweep.errors[0].find("Permission denied"), std::string::npos);
  folders.list_error.clear();
  folders.remove_error = "b_main: Device or resource busy";
  sweep = agent::SweepHamiCoreFolders(folders, {{}, 10000}, 1000);
  EXPECT_TRUE(sweep.removed.empty());
  EXPECT_EQ(sweep.errors.size(), 1U);
  EXPECT_EQ(folders.folders.size(), 1U);
}

}  // namespace
}  // namespace tessera
