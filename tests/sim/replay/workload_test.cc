#include "sim/replay/workload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace tessera::sim::replay {
namespace {

int64_t TotalGpuMilli(const std::vector<TracePod>& pods) {
  int64_t total = 0;
  for (const TracePod& pod : pods) total += pod.TotalGpuMilli();
  return total;
}

std::vector<std::string> Names(const std::vector<TracePod>& pods) {
  std::vector<std::string> names;
  for (const TracePod& pod : pods) names.push_back(pod.name);
  return names;
}

// A small trace with every pod type: 100 pods requesting 61 GPUs in all.
std::vector<TracePod> SmallTrace() {
  std::vector<TracePod> pods;
  for (int i = 0; i < 100; ++i) {
    TracePod pod;
    pod.name = "pod-" + std::to_string(1000 + i);
    pod.cpu_milli = 1000 + i;
    pod.memory_mib = 100;
    switch (i % 4) {
      case 0:
        break;  // CPU-only
      case 1:
        pod.num_gpu = 1;
        pod.gpu_milli = 440;
        break;
      case 2:
        pod.num_gpu = 1;
        pod.gpu_milli = 1000;
        break;
      default:
        pod.num_gpu = i % 8 == 3 ? 2 : 1;
        pod.gpu_milli = 1000;
    }
    pods.push_back(pod);
  }
  return pods;
}

TEST(UniformIndex, StaysInRangeAndCoversIt) {
  std::mt19937_64 rng(7);
  std::set<size_t> seen;
  for (int i = 0; i < 1000; ++i) {
    size_t v = UniformIndex(rng, 5);
    ASSERT_LT(v, 5u);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_EQ(UniformIndex(rng, 1), 0u);
  EXPECT_EQ(UniformIndex(rng, 0), 0u);
}

TEST(Inflate, FillsJustBelowTuneTimesCapacity) {
  const std::vector<TracePod> trace = SmallTrace();
  const int64_t capacity = 80 * kMilliPerGpu;  // 80 GPUs
  for (uint64_t seed : {42u, 43u, 44u}) {
    std::vector<TracePod> pods = Inflate(trace, capacity, 1.3, seed);
    const double target = 1.3 * static_cast<double>(capacity);
    const int64_t total = TotalGpuMilli(pods);
    // tuneUpPods stops at the first draw whose per-GPU request would pass the target.
    EXPECT_GT(static_cast<double>(total), target - kMilliPerGpu);
    EXPECT_LE(static_cast<double>(total), target + 1 * kMilliPerGpu);  // 2-GPU pods at most
    EXPECT_GT(pods.size(), trace.size());
    // The trace's own pods come first (shuffled), then the tuned copies.
    std::vector<std::string> first = Names({pods.begin(), pods.begin() + trace.size()});
    std::vector<std::string> original = Names(trace);
    std::sort(first.begin(), first.end());
    EXPECT_EQ(first, original);
    EXPECT_NE(Names({pods.begin(), pods.begin() + trace.size()}), original);
    for (size_t i = trace.size(); i < pods.size(); ++i) {
      EXPECT_NE(pods[i].name.find("-tuned-" + std::to_string(i - trace.size())), std::string::npos);
    }
  }
}

TEST(Inflate, IsDeterministicPerSeed) {
  const std::vector<TracePod> trace = SmallTrace();
  EXPECT_EQ(Names(Inflate(trace, 80000, 1.3, uint64_t{42})),
            Names(Inflate(trace, 80000, 1.3, uint64_t{42})));
  EXPECT_NE(Names(Inflate(trace, 80000, 1.3, uint64_t{42})),
            Names(Inflate(trace, 80000, 1.3, uint64_t{43})));
}

TEST(Inflate, TunesDownARequestAboveTheTarget) {
  const std::vector<TracePod> trace = SmallTrace();  // 61 GPUs requested
  std::vector<TracePod> pods = Inflate(trace, 40000, 1.0, uint64_t{1});
  EXPECT_LE(TotalGpuMilli(pods), 40000);
  EXPECT_LT(pods.size(), trace.size());
}

TEST(Inflate, NonPositiveTuneOnlyShuffles) {
  const std::vector<TracePod> trace = SmallTrace();
  std::vector<TracePod> pods = Inflate(trace, 80000, 0, uint64_t{1});
  EXPECT_EQ(pods.size(), trace.size());
  EXPECT_EQ(TotalGpuMilli(pods), TotalGpuMilli(trace));
}

TEST(Inflate, WorkloadWithoutGpuPodsIsNotTunedUp) {
  std::vector<TracePod> trace = {{"a", 1000, 1, 0, 0, {}}, {"b", 1000, 1, 0, 0, {}}};
  EXPECT_EQ(Inflate(trace, 80000, 1.3, uint64_t{1}).size(), 2u);
  EXPECT_TRUE(Inflate({}, 80000, 1.3, uint64_t{1}).empty());
}

TEST(SchedulerNodeOrder, IsASeededPermutation) {
  std::vector<TraceNode> nodes(30);
  for (size_t i = 0; i < nodes.size(); ++i) {
    nodes[i].name = std::to_string(100 + i);
    nodes[i].gpus = 1;
  }
  std::mt19937_64 rng_a(5), rng_b(5);
  auto a = SchedulerNodeOrder(nodes, rng_a);
  auto b = SchedulerNodeOrder(nodes, rng_b);
  ASSERT_EQ(a.size(), nodes.size());
  std::vector<std::string> names_a, names_b, sorted;
  for (auto& n : a) names_a.push_back(n.name);
  for (auto& n : b) names_b.push_back(n.name);
  for (auto& n : nodes) sorted.push_back(n.name);
  EXPECT_EQ(names_a, names_b);
  EXPECT_NE(names_a, sorted);
  std::sort(names_a.begin(), names_a.end());
  EXPECT_EQ(names_a, sorted);
}

}  // namespace
}  // namespace tessera::sim::replay
