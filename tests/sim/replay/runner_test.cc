#include "sim/replay/runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "sim/replay/metrics.h"

namespace tessera::sim::replay {
namespace {

using ::testing::HasSubstr;

std::vector<TraceNode> SyntheticNodes() {
  std::vector<TraceNode> nodes;
  for (int i = 0; i < 40; ++i) {
    const int gpus = i % 3 == 0 ? 8 : (i % 3 == 1 ? 2 : 4);
    nodes.push_back({"node-" + std::to_string(100 + i), gpus * 12000, gpus * 65536, gpus,
                     i % 4 == 0 ? "V100M16" : "T4"});
  }
  return nodes;
}

std::vector<TracePod> SyntheticPods() {
  std::mt19937_64 rng(2024);
  std::vector<TracePod> pods;
  const int64_t shares[] = {250, 460, 500, 810};
  for (int i = 0; i < 160; ++i) {
    TracePod pod;
    pod.name = "pod-" + std::to_string(1000 + i);
    pod.cpu_milli = 2000 + 1000 * static_cast<int64_t>(rng() % 8);
    pod.memory_mib = 4096;
    switch (rng() % 5) {
      case 0:
        break;
      case 1:
      case 2:
        pod.num_gpu = 1;
        pod.gpu_milli = shares[rng() % 4];
        break;
      case 3:
        pod.num_gpu = 1;
        pod.gpu_milli = 1000;
        break;
      default:
        pod.num_gpu = rng() % 2 == 0 ? 2 : 4;
        pod.gpu_milli = 1000;
        if (rng() % 3 == 0) pod.gpu_spec = {"V100M16"};
    }
    pods.push_back(pod);
  }
  return pods;
}

bool SameSeries(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) != std::isnan(b[i])) return false;
    if (!std::isnan(a[i]) && a[i] != b[i]) return false;
  }
  return true;
}

void ExpectSameResults(const std::vector<SeedResult>& a, const std::vector<SeedResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].seed, b[i].seed);
    EXPECT_EQ(a[i].pods, b[i].pods);
    EXPECT_EQ(a[i].scheduled, b[i].scheduled);
    EXPECT_EQ(a[i].failed_by_kind, b[i].failed_by_kind);
    EXPECT_TRUE(SameSeries(a[i].series.gpu_alloc_pct, b[i].series.gpu_alloc_pct));
    EXPECT_TRUE(SameSeries(a[i].series.frag_amount_pct, b[i].series.frag_amount_pct));
    EXPECT_TRUE(SameSeries(a[i].series.frag_ratio_pct, b[i].series.frag_ratio_pct));
  }
}

TEST(RunReplay, SameResultsWhateverTheJobCount) {
  const auto nodes = SyntheticNodes();
  const auto pods = SyntheticPods();
  const std::vector<uint64_t> seeds = {42, 43, 44};
  for (const std::string& policy : BuiltinPolicyNames()) {
    for (TieBreak tie_break : {TieBreak::kFirstInNodeOrder, TieBreak::kUniform}) {
      auto one = RunReplay(nodes, pods, policy, seeds, 1.3, 1, nullptr, {}, tie_break);
      auto two = RunReplay(nodes, pods, policy, seeds, 1.3, 2, nullptr, {}, tie_break);
      ASSERT_TRUE(one.ok()) << one.error().message;
      ASSERT_TRUE(two.ok()) << two.error().message;
      ExpectSameResults(*one, *two);
      EXPECT_EQ((*one)[1].seed, 43u);
      EXPECT_EQ((*one)[0].policy, policy);
    }
  }
}

TEST(RunReplay, SeedsDifferAndTheSeriesAreSane) {
  auto runs = RunReplay(SyntheticNodes(), SyntheticPods(), "bestfit", {1, 2}, 1.3, 2);
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  const SeedResult& run = (*runs)[0];
  EXPECT_GT(run.pods, 160);
  EXPECT_EQ(run.scheduled + run.failed(), run.pods);
  ASSERT_GE(run.series.gpu_alloc_pct.size(), 131u);
  EXPECT_LT(run.series.gpu_alloc_pct[0], 5.0);
  EXPECT_GT(run.series.gpu_alloc_pct[130], 50.0);
  EXPECT_LE(run.series.gpu_alloc_pct[130], 100.0);
  for (size_t x = 1; x <= 130; ++x) {
    if (!std::isnan(run.series.gpu_alloc_pct[x])) {
      EXPECT_LE(run.series.gpu_alloc_pct[x], static_cast<double>(x) + 1.5) << x;
    }
  }
  EXPECT_GT(run.series.frag_amount_pct[0], 0.0);
  EXPECT_GE(run.wall_seconds, 0.0);
  EXPECT_FALSE(SameSeries(run.series.gpu_alloc_pct, (*runs)[1].series.gpu_alloc_pct));
}

TEST(RunReplay, ReportsProgressAndErrors) {
  std::vector<std::pair<int, int>> calls;
  auto runs = RunReplay(SyntheticNodes(), SyntheticPods(), "gpupacking", {1, 2, 3}, 1.3, 2, nullptr,
                        [&](int done, int total) { calls.emplace_back(done, total); });
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(calls.size(), 3u * kProgressStepsPerSeed);
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].first, static_cast<int>(i) + 1);
    EXPECT_EQ(calls[i].second, 3 * kProgressStepsPerSeed);
  }
  auto unknown = RunReplay(SyntheticNodes(), SyntheticPods(), "nope", {1});
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error().message, HasSubstr("unknown policy 'nope'"));
}

// A policy that picks an impossible GPU: the replay stops with an error, it does not crash.
class BrokenPolicy : public ChoosingPolicy {
 public:
  std::string_view Name() const override { return "broken"; }
  std::optional<Choice> Choose(const ReplayCluster&, const TracePod& pod,
                               std::mt19937_64&) override {
    return Choice{0, std::vector<int>(pod.num_gpu, 99)};
  }
};

TEST(RunReplay, APolicyMistakeIsAnError) {
  PolicyFactories extra;
  extra["broken"] = [](const TargetWorkload&) { return std::make_unique<BrokenPolicy>(); };
  auto runs = RunReplay(SyntheticNodes(), SyntheticPods(), "broken", {1}, 1.3, 1, &extra);
  ASSERT_FALSE(runs.ok());
  EXPECT_THAT(runs.error().message, HasSubstr("policy broken, seed 1"));
}

// The real trace, when the shared data is present: its published shape and one BestFit run.
TEST(RunReplay, DefaultOpenbTrace) {
  const std::string dir = std::string(TESSERA_SHARED_DIR) + "/data/alibaba-gpu-v2023/csv/";
  if (!std::filesystem::exists(dir + "openb_pod_list_default.csv")) {
    GTEST_SKIP() << "no shared trace at " << dir;
  }
  auto nodes = LoadTraceNodes(dir + "openb_node_list_gpu_node.csv");
  auto pods = LoadTracePods(dir + "openb_pod_list_default.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  EXPECT_EQ(nodes->size(), 1213u);
  EXPECT_EQ(ReplayCluster(*nodes).total_gpus(), 6212);
  EXPECT_EQ(pods->size(), 8152u);
  std::array<int, kPodKindCount> kinds{};
  for (const TracePod& pod : *pods) ++kinds[static_cast<int>(KindOf(pod))];
  EXPECT_EQ(kinds, (std::array<int, kPodKindCount>{1088, 3078, 3911, 75}));
  TargetWorkload target = BuildTargetWorkload(*pods);
  EXPECT_EQ(target.distinct_shapes, 91u);
  EXPECT_EQ(target.shapes.size(), 35u);

  auto runs = RunReplay(*nodes, *pods, "bestfit", {42});
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  // Published: 93.08 +- 0.13 over seeds 42-51 at 130% arrived.
  EXPECT_NEAR((*runs)[0].series.gpu_alloc_pct[130], 93.08, 0.7);
  EXPECT_NEAR((*runs)[0].series.frag_amount_pct[0], 14.04, 0.3);
}

}  // namespace
}  // namespace tessera::sim::replay
