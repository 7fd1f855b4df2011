#include "sim/mig_replay/mig_replay.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessera::sim::mig_replay {
namespace {

TEST(MigReplayTest, SeedsAreLabelledAsRanges) {
  EXPECT_EQ(SeedsLabel({42, 43, 44, 45, 46}), "42-46");
  EXPECT_EQ(SeedsLabel({1, 5, 7, 8, 9}), "1, 5, 7-9");
  EXPECT_EQ(SeedsLabel({3}), "3");
}

TEST(MigReplayTest, BadOptionsAreNamedAndNothingRuns) {
  MigReplayOptions o;
  o.out_dir = ::testing::TempDir() + "/mig_replay_bad";
  std::filesystem::remove_all(o.out_dir);
  o.fleets = {"tpu"};
  Status s = ReplayMig(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--fleet: unknown value \"tpu\""), std::string::npos) << s.message();
  o.fleets = {};
  o.workloads = {"openb"};  // named, but no trace
  s = ReplayMig(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--workload openb: needs --trace"), std::string::npos);
  o.workloads = {};
  o.nodes_per_fleet = 0;
  EXPECT_NE(ReplayMig(o).message().find("--nodes-per-fleet"), std::string::npos);
  o.nodes_per_fleet = 1;
  o.loads = {0};
  EXPECT_NE(ReplayMig(o).message().find("--loads"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(o.out_dir));
}

TEST(MigReplayTest, ACellRunsAndItsFilesAreWritten) {
  MigReplayOptions o;
  o.fleets = {"a100-40gb"};
  o.workloads = {"uniform"};
  o.seeds = {42, 44};
  o.nodes_per_fleet = 1;
  o.skip_optimum = true;
  o.skip_pending = true;
  // The files are checked here, not the search.
  o.offline_guide.placers = {"tessera"};
  o.offline_guide.search_requests = 0;
  o.offline_guide.patterns.rounds = 0;
  o.out_dir = ::testing::TempDir() + "/mig_replay_cell";
  std::filesystem::remove_all(o.out_dir);
  ASSERT_TRUE(ReplayMig(o).ok());
  for (const char* file : {"summary.csv", "runs.csv", "report.html"}) {
    EXPECT_TRUE(std::filesystem::exists(o.out_dir + "/" + file)) << file;
  }
  EXPECT_FALSE(std::filesystem::exists(o.out_dir + "/optimum.csv"));
  std::ifstream html(o.out_dir + "/report.html");
  std::stringstream text;
  text << html.rdbuf();
  EXPECT_NE(text.str().find("seeds 42, 44"), std::string::npos);
  EXPECT_NE(text.str().find("a100-40gb"), std::string::npos);
}

}  // namespace
}  // namespace tessera::sim::mig_replay
