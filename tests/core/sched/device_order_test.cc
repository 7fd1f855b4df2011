#include "core/sched/device_order.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/builders.h"

namespace tessera::sched {
namespace {

using ::testing::ElementsAre;
using testing::SharingGpu;

// Three alike GPUs; GPU 1 is the busiest, GPUs 0 and 2 are empty.
state::NodeState ThreeGpus() {
  state::NodeState node;
  for (uint32_t i = 0; i < 3; ++i) {
    node.devices.push_back(SharingGpu("GPU-" + std::to_string(i), 32768, 0, i));
  }
  node.usage.resize(3);
  node.usage[1] = state::DeviceUsage{2, 8192, 40, {}, 0, 0};
  return node;
}

PodPreferences Policy(const std::string& name) {
  PodPreferences prefs;
  prefs.gpu_policy = ParseGpuPolicy(name).value();
  return prefs;
}

TEST(DeviceOrderTest, DeviceScoreCountsTheRequestWithTheUsage) {
  const state::NodeState node = ThreeGpus();
  const ContainerRequest request{1, 4096, kMemPercentUnset, 10};
  // 10 * ((1 + 2) / 10 + (10 + 40) / 100 + (4096 + 8192) / 32768)
  EXPECT_FLOAT_EQ(DeviceScore(node.devices[1], node.usage[1], request, ScoringWeights{}),
                  10.0F * (3.0F / 10.0F + 50.0F / 100.0F + 12288.0F / 32768.0F));
  // Weights scale each term.
  EXPECT_FLOAT_EQ(DeviceScore(node.devices[0], node.usage[0], request, ScoringWeights{2, 0, 0}),
                  10.0F * (2.0F * 1.0F / 10.0F));
}

// Fit visits the end of OrderDevices' list first: spread visits the emptiest GPU first (the
// highest index among equals), binpack the fullest.
TEST(DeviceOrderTest, HamiVisitOrderIsFitsScanOfTheDeviceOrder) {
  const state::NodeState node = ThreeGpus();
  const ContainerRequest one{.nums = 1};
  EXPECT_THAT(HamiVisitOrder(node, one, Policy("spread")), ElementsAre(2, 0, 1));
  EXPECT_THAT(HamiVisitOrder(node, one, Policy("binpack")), ElementsAre(1, 2, 0));
  // The same as reversing OrderDevices' list.
  std::vector<float> scores;
  std::vector<int32_t> used;
  for (size_t i = 0; i < 3; ++i) {
    scores.push_back(DeviceScore(node.devices[i], node.usage[i], one, ScoringWeights{}));
    used.push_back(node.usage[i].used);
  }
  std::vector<int> order(3);
  OrderDevices(node.devices, scores, used, Policy("spread"), order);
  EXPECT_THAT(order, ElementsAre(1, 0, 2));
}

}  // namespace
}  // namespace tessera::sched
