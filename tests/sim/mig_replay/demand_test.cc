#include "sim/mig_replay/demand.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/mig_replay/benchmark.h"
#include "sim/mig_replay/geometry_free.h"
#include "sim/mig_replay/upper_bound.h"
#include "test_fleet.h"

namespace tessera::sim::mig_replay {
namespace {

using testing::Catalog;

std::string IntendedName(const std::string& model, const RequestType& type) {
  const Workload w{"w", {type}, {1.0}};
  MigCluster cluster(testing::Nodes(model, 1), w);
  const int p = cluster.Intended(0, 0, 0);
  return p < 0 ? "none" : cluster.nodes()[0]->mig_models[0].profiles()[p].name;
}

TEST(MigDemand, ComputeSlicesNeededRoundsUpTheShare) {
  EXPECT_EQ(ComputeSlicesNeeded(RequestType{3, 7, 1, ""}, 7), 3u);
  EXPECT_EQ(ComputeSlicesNeeded(RequestType{3, 7, 1, ""}, 4), 2u);       // ceil(12/7)
  EXPECT_EQ(ComputeSlicesNeeded(RequestType{4, 7, 1, ""}, 4), 3u);       // ceil(16/7)
  EXPECT_EQ(ComputeSlicesNeeded(RequestType{300, 1000, 1, ""}, 7), 3u);  // ceil(2.1)
  EXPECT_EQ(ComputeSlicesNeeded(RequestType{500, 1000, 1, ""}, 4), 2u);
  EXPECT_EQ(ComputeSlicesNeeded(RequestType{1, 1000, 1, ""}, 7), 1u);
}

TEST(MigDemand, SyntheticSizesMapToTheIntendedProfileOnEveryModel) {
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kUniform);
  ASSERT_EQ(w.types.size(), 5u);
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"A100-40GB", {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}},
      {"A100-80GB", {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {"H100-SXM5-80GB", {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {"H200-141GB", {"1g.18gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}},
      {"B200-180GB", {"1g.23gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"}},
      // 4 compute slices: c = ceil(g * 4 / 7) = 1, 2, 2, 3, 4.
      {"RTX-PRO-6000-Blackwell-96GB", {"1g.24gb", "2g.48gb", "2g.48gb", "4g.96gb", "4g.96gb"}},
  };
  for (const auto& [model, names] : expected) {
    for (size_t t = 0; t < w.types.size(); ++t) {
      EXPECT_EQ(IntendedName(model, w.types[t]), names[t]) << model << " " << w.types[t].label;
    }
  }
}

TEST(MigDemand, OpenbPodsMapBySharePerModel) {
  std::vector<replay::TracePod> pods(5);
  pods[0].num_gpu = 0;  // CPU-only: dropped
  pods[1].num_gpu = 1;
  pods[1].gpu_milli = 300;
  pods[2].num_gpu = 1;
  pods[2].gpu_milli = 300;
  pods[3].num_gpu = 1;
  pods[3].gpu_milli = 1000;
  pods[4].num_gpu = 4;
  pods[4].gpu_milli = 1000;
  auto w = MakeOpenbWorkload(pods);
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_EQ(w->types.size(), 3u);
  EXPECT_EQ(w->types[0], (RequestType{300, 1000, 1, "milli 300"}));
  EXPECT_EQ(w->types[1], (RequestType{1000, 1000, 1, "gpu x1"}));
  EXPECT_EQ(w->types[2], (RequestType{1000, 1000, 4, "gpu x4"}));
  EXPECT_DOUBLE_EQ(w->probabilities[0], 0.5);
  EXPECT_DOUBLE_EQ(w->probabilities[2], 0.25);
  // 300 milli: 3 of 7 slices (3g) on an A100, 2 of 4 (2g) on the RTX PRO 6000.
  EXPECT_EQ(IntendedName("A100-40GB", w->types[0]), "3g.20gb");
  EXPECT_EQ(IntendedName("RTX-PRO-6000-Blackwell-96GB", w->types[0]), "2g.48gb");
  EXPECT_EQ(IntendedName("H100-SXM5-80GB", w->types[2]), "7g.80gb");
}

TEST(MigDemand, OpenbWithoutGpuPodsIsAnError) {
  std::vector<replay::TracePod> pods(2);
  EXPECT_FALSE(MakeOpenbWorkload(pods).ok());
}

TEST(MigDemand, SamplingIsSeeded) {
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kSmallHeavy);
  std::mt19937_64 a(42), b(42);
  const auto x = SamplePoissonArrivals(w, 200, 3.0, a);
  const auto y = SamplePoissonArrivals(w, 200, 3.0, b);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i].type, y[i].type);
    EXPECT_EQ(x[i].time, y[i].time);
    EXPECT_EQ(x[i].lifetime, y[i].lifetime);
    if (i > 0) {
      EXPECT_GT(x[i].time, x[i - 1].time);
    }
  }
}

// A memory request maps to the smallest profile with that memory on each model, so one request
// spans 7-slice and 4-slice GPUs (the mixed-rtx fleet).
TEST(MigDemand, MemoryRequestsMapToTheSmallestProfileWithThatMemory) {
  const Workload w = MakeMemoryMixWorkload();
  ASSERT_TRUE(NamesMemory(w));
  EXPECT_FALSE(NamesMemory(MakeSyntheticWorkload(SyntheticMix::kUniform)));
  std::vector<std::string> a100, h100, rtx;
  for (const RequestType& t : w.types) {
    a100.push_back(IntendedName("A100-40GB", t));
    h100.push_back(IntendedName("H100-SXM5-80GB", t));
    rtx.push_back(IntendedName("RTX-PRO-6000-Blackwell-96GB", t));
  }
  EXPECT_THAT(
      a100, ::testing::ElementsAre("1g.5gb", "1g.5gb", "3g.20gb", "3g.20gb", "7g.40gb", "7g.40gb"));
  EXPECT_THAT(h100, ::testing::ElementsAre("1g.10gb", "1g.10gb", "2g.20gb", "2g.20gb", "3g.40gb",
                                           "3g.40gb"));
  EXPECT_THAT(rtx, ::testing::ElementsAre("1g.24gb", "1g.24gb", "1g.24gb", "1g.24gb", "2g.48gb",
                                          "2g.48gb"));
  double sum = 0;
  for (double p : w.probabilities) sum += p;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  // More than 40 GB fits no A100-40GB profile.
  EXPECT_EQ(IntendedName("A100-40GB", RequestType{1, 1, 1, "big", 41000}), "none");
}

// The multi-instance workloads (issue 39): pods of several instances on one node, which may share
// a GPU, among one-instance pods of every size.
double Sum(const std::vector<double>& p) {
  double sum = 0;
  for (double x : p) sum += x;
  return sum;
}

// Probability of the types asking more than one instance.
double MultiInstanceShare(const Workload& w) {
  double share = 0;
  for (size_t t = 0; t < w.types.size(); ++t) {
    if (w.types[t].count > 1) share += w.probabilities[t];
  }
  return share;
}

std::vector<std::string> Labels(const Workload& w) {
  std::vector<std::string> out;
  for (const RequestType& t : w.types) out.push_back(t.label);
  return out;
}

std::vector<int32_t> Counts(const Workload& w) {
  std::vector<int32_t> out;
  for (const RequestType& t : w.types) out.push_back(t.count);
  return out;
}

std::vector<std::string> IntendedNames(const std::string& model, const Workload& w) {
  std::vector<std::string> out;
  for (const RequestType& t : w.types) out.push_back(IntendedName(model, t));
  return out;
}

TEST(MigDemand, MultiSmallAsksSeveral1gInstancesInHalfThePods) {
  const Workload w = MakeMultiSmallWorkload();
  EXPECT_EQ(w.name, "multi-small");
  EXPECT_FALSE(NamesMemory(w));
  EXPECT_THAT(Labels(w), ::testing::ElementsAre("1/7", "2/7", "3/7", "4/7", "7/7", "1/7 x2",
                                                "1/7 x3", "1/7 x4"));
  EXPECT_THAT(Counts(w), ::testing::ElementsAre(1, 1, 1, 1, 1, 2, 3, 4));
  EXPECT_THAT(w.probabilities,
              ::testing::ElementsAre(0.15, 0.10, 0.10, 0.08, 0.07, 0.25, 0.15, 0.10));
  EXPECT_NEAR(Sum(w.probabilities), 1.0, 1e-12);
  EXPECT_NEAR(MultiInstanceShare(w), 0.5, 1e-12);
  EXPECT_THAT(IntendedNames("A100-40GB", w),
              ::testing::ElementsAre("1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb", "1g.5gb",
                                     "1g.5gb", "1g.5gb"));
  EXPECT_THAT(IntendedNames("H100-SXM5-80GB", w),
              ::testing::ElementsAre("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb",
                                     "1g.10gb", "1g.10gb", "1g.10gb"));
  EXPECT_THAT(IntendedNames("B200-180GB", w),
              ::testing::ElementsAre("1g.23gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb",
                                     "1g.23gb", "1g.23gb", "1g.23gb"));
  // 4 compute slices: the shares map as in the synthetic mixes, 1/7 to 1g.24gb.
  EXPECT_THAT(IntendedNames("RTX-PRO-6000-Blackwell-96GB", w),
              ::testing::ElementsAre("1g.24gb", "2g.48gb", "2g.48gb", "4g.96gb", "4g.96gb",
                                     "1g.24gb", "1g.24gb", "1g.24gb"));
}

TEST(MigDemand, MultiMixedAsksSeveralInstancesOfMixedSizes) {
  const Workload w = MakeMultiMixedWorkload();
  EXPECT_EQ(w.name, "multi-mixed");
  EXPECT_FALSE(NamesMemory(w));
  EXPECT_THAT(Labels(w),
              ::testing::ElementsAre("1/7", "2/7", "3/7", "4/7", "7/7", "1/7 x2", "1/7 x3",
                                     "1/7 x4", "2/7 x2", "2/7 x3", "3/7 x2", "4/7 x2"));
  EXPECT_THAT(Counts(w), ::testing::ElementsAre(1, 1, 1, 1, 1, 2, 3, 4, 2, 3, 2, 2));
  EXPECT_NEAR(Sum(w.probabilities), 1.0, 1e-12);
  EXPECT_NEAR(MultiInstanceShare(w), 0.5, 1e-12);
  EXPECT_THAT(
      IntendedNames("A100-80GB", w),
      ::testing::ElementsAre("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.10gb",
                             "1g.10gb", "1g.10gb", "2g.20gb", "2g.20gb", "3g.40gb", "4g.40gb"));
  EXPECT_THAT(
      IntendedNames("H200-141GB", w),
      ::testing::ElementsAre("1g.18gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb", "1g.18gb",
                             "1g.18gb", "1g.18gb", "2g.35gb", "2g.35gb", "3g.71gb", "4g.71gb"));
}

// 4000 MiB is a 1g on every model, the RTX PRO 6000's 1g.24gb included, so the multi-instance
// memory workload runs on every fleet, mixed-rtx too.
TEST(MigDemand, MultiMemoryMapsItsSeveralInstancesTo1gOnEveryModel) {
  const Workload w = MakeMultiMemoryWorkload();
  EXPECT_EQ(w.name, "multi-memory");
  EXPECT_TRUE(NamesMemory(w));
  EXPECT_THAT(Labels(w), ::testing::ElementsAre("4000MiB x1", "19000MiB x1", "40000MiB x1",
                                                "4000MiB x2", "4000MiB x3", "4000MiB x4"));
  EXPECT_THAT(Counts(w), ::testing::ElementsAre(1, 1, 1, 2, 3, 4));
  EXPECT_THAT(w.probabilities, ::testing::ElementsAre(0.25, 0.15, 0.10, 0.25, 0.15, 0.10));
  EXPECT_NEAR(Sum(w.probabilities), 1.0, 1e-12);
  EXPECT_NEAR(MultiInstanceShare(w), 0.5, 1e-12);
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"A100-40GB", {"1g.5gb", "3g.20gb", "7g.40gb"}},
      {"A100-80GB", {"1g.10gb", "2g.20gb", "3g.40gb"}},
      {"H100-SXM5-80GB", {"1g.10gb", "2g.20gb", "3g.40gb"}},
      {"H200-141GB", {"1g.18gb", "2g.35gb", "3g.71gb"}},
      {"B200-180GB", {"1g.23gb", "1g.23gb", "2g.45gb"}},
      {"RTX-PRO-6000-Blackwell-96GB", {"1g.24gb", "1g.24gb", "2g.48gb"}},
  };
  for (const auto& [model, one] : expected) {
    EXPECT_THAT(IntendedNames(model, w),
                ::testing::ElementsAre(one[0], one[1], one[2], one[0], one[0], one[0]))
        << model;
    EXPECT_EQ(one[0].substr(0, 3), "1g.") << model;
  }
}

TEST(MigDemand, MultiInstanceWorkloadsRunWhereTheirRequestsMeanTheSame) {
  const auto& catalog = Catalog();
  for (const Workload& w : {MakeMultiSmallWorkload(), MakeMultiMixedWorkload()}) {
    EXPECT_TRUE(RunsOn(*FindFleet("a100-40gb"), w, catalog)) << w.name;
    EXPECT_TRUE(RunsOn(*FindFleet("rtx-pro-6000"), w, catalog)) << w.name;
    EXPECT_TRUE(RunsOn(*FindFleet("mixed"), w, catalog)) << w.name;
    EXPECT_FALSE(RunsOn(*FindFleet("mixed-rtx"), w, catalog)) << w.name;
  }
  for (const FleetSpec& fleet : AllFleets()) {
    EXPECT_TRUE(RunsOn(fleet, MakeMultiMemoryWorkload(), catalog)) << fleet.name;
  }
}

// A short run of each protocol and every policy (and the bounds) on a small fleet: the pods of
// several instances are placed, and each type's counts add up.
TEST(MigDemand, MultiInstanceWorkloadsRunInEveryProtocol) {
  BenchmarkOptions options;
  options.warmup_lifetimes = 1;
  options.measure_lifetimes = 2;
  const std::vector<Protocol> protocols = {Protocol{false, 0, false}, Protocol{true, 0.9, false},
                                           Protocol{true, 1.2, true}};
  const std::vector<std::pair<std::string, Workload>> cells = {
      {"a100-40gb", MakeMultiSmallWorkload()},
      {"h100-80gb", MakeMultiMixedWorkload()},
      {"mixed-rtx", MakeMultiMemoryWorkload()},
  };
  std::vector<std::string> policies = AllPolicyNames();
  policies.emplace_back(kReferencePooledSlices);
  policies.emplace_back(kUpperBound);
  for (const auto& [fleet, workload] : cells) {
    auto nodes = BuildFleetNodes(*FindFleet(fleet), 3, Catalog());
    ASSERT_TRUE(nodes.ok()) << nodes.error().message;
    for (const Protocol& protocol : protocols) {
      for (const std::string& policy : policies) {
        const std::string cell = fleet + " " + workload.name + " " + protocol.Name() + " " + policy;
        auto run = RunOne(nodes.value(), fleet, workload, protocol, policy, 42, options);
        ASSERT_TRUE(run.ok()) << cell << ": " << run.error().message;
        const RunMetrics& m = run->metrics;
        EXPECT_GT(m.arrived, 0) << cell;
        EXPECT_GT(m.accepted, 0) << cell;
        EXPECT_EQ(run->type_labels.size(), workload.types.size()) << cell;
        if (policy == kUpperBound) continue;
        int64_t arrived = 0;
        int64_t multi_accepted = 0;
        for (size_t t = 0; t < m.by_type.size(); ++t) {
          arrived += m.by_type[t].arrived;
          if (workload.types[t].count > 1) multi_accepted += m.by_type[t].accepted;
        }
        EXPECT_EQ(arrived, m.arrived) << cell;
        EXPECT_GT(multi_accepted, 0) << cell;
        if (protocol.pending) {
          size_t waits = 0;
          for (const auto& w : m.waits_by_type) waits += w.size();
          EXPECT_EQ(waits, static_cast<size_t>(m.arrived)) << cell;
        } else {
          EXPECT_TRUE(m.waits_by_type.empty()) << cell;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::sim::mig_replay
