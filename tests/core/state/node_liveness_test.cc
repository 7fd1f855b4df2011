#include "core/state/node_liveness.h"

#include <gtest/gtest.h>

namespace tessera::state {
namespace {

using std::chrono::seconds;

model::Node NodeWithGpus(const std::string& name, const std::string& count) {
  model::Node n;
  n.name = name;
  if (!count.empty()) n.allocatable["nvidia.com/gpu"] = count;
  return n;
}

TEST(NodeLivenessTest, ZeroAllocatableForTheGracePeriodMakesANodeNotLive) {
  NodeLiveness live("nvidia.com/gpu", seconds(60));
  const NodeLiveness::Clock::time_point t0{};
  live.Observe(NodeWithGpus("n1", "4"), t0);
  EXPECT_EQ(live.Verdict("n1", t0 + seconds(3600)), "");
  live.Observe(NodeWithGpus("n1", "0"), t0 + seconds(10));
  live.Observe(NodeWithGpus("n1", "0"), t0 + seconds(40));  // still 0: the clock keeps running
  EXPECT_EQ(live.Verdict("n1", t0 + seconds(69)), "");
  EXPECT_EQ(live.Verdict("n1", t0 + seconds(70)),
            "node unregistered: no live device plugin (allocatable nvidia.com/gpu is 0)");
  live.Observe(NodeWithGpus("n1", "1"), t0 + seconds(80));
  EXPECT_EQ(live.Verdict("n1", t0 + seconds(80)), "") << "live again at once";
}

TEST(NodeLivenessTest, NoCountAtAllIsZeroAndUnknownNodesAreLive) {
  NodeLiveness live("nvidia.com/gpu", seconds(60));
  const NodeLiveness::Clock::time_point t0{};
  live.Observe(NodeWithGpus("n1", ""), t0);
  live.Observe(NodeWithGpus("n2", "garbage"), t0);
  EXPECT_NE(live.Verdict("n1", t0 + seconds(60)), "");
  EXPECT_NE(live.Verdict("n2", t0 + seconds(60)), "");
  EXPECT_EQ(live.Verdict("never-seen", t0 + seconds(600)), "");
  live.Forget("n1");
  EXPECT_EQ(live.Verdict("n1", t0 + seconds(600)), "");
}

TEST(NodeLivenessTest, ZeroGraceTurnsTheCheckOff) {
  NodeLiveness live("nvidia.com/gpu", seconds(0));
  const NodeLiveness::Clock::time_point t0{};
  live.Observe(NodeWithGpus("n1", "0"), t0);
  EXPECT_FALSE(live.enabled());
  EXPECT_EQ(live.Verdict("n1", t0 + seconds(6000)), "");
}

}  // namespace
}  // namespace tessera::state
