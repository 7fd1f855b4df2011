#include "sim/mig_replay/benchmark.h"
#include "sim/mig_replay/placement_bound.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sim/mig_replay/geometry_free.h"
#include "sim/mig_replay/headline.h"
#include "sim/mig_replay/report.h"
#include "sim/mig_replay/summary.h"
#include "sim/mig_replay/upper_bound.h"
#include "test_fleet.h"

namespace tessera::sim::mig_replay {
namespace {

using ::testing::HasSubstr;

BenchmarkOptions SmallBenchmark() {
  BenchmarkOptions o;
  o.fleets = {"a100-40gb", "mixed"};
  o.workloads = {MakeSyntheticWorkload(SyntheticMix::kSmallHeavy)};
  o.policies = AllPolicyNames();
  o.seeds = {42, 43};
  o.nodes_per_fleet = 2;
  o.loads = {0.9};
  // The placement LP costs seconds per cell (placement_bound_test.cc checks it); the test of
  // every run's counts turns it on.
  o.placement_bound_max_gpus = 0;
  return o;
}

TEST(MigBenchmark, SameSeedsGiveTheSameCsvWhateverTheJobs) {
  BenchmarkOptions o = SmallBenchmark();
  auto one = RunBenchmark(o, testing::Catalog());
  ASSERT_TRUE(one.ok()) << one.error().message;
  auto again = RunBenchmark(o, testing::Catalog());
  o.jobs = 2;
  auto two = RunBenchmark(o, testing::Catalog());
  ASSERT_TRUE(again.ok() && two.ok());
  const std::string csv = SummaryCsv(Summarize(one.value()));
  EXPECT_EQ(csv, SummaryCsv(Summarize(again.value())));
  EXPECT_EQ(csv, SummaryCsv(Summarize(two.value())));
  // 2 fleets x 1 workload x 2 seeds x 3 protocols (saturation, steady-0.9, pending-0.9) x (7
  // policies, the reference and the bound).
  EXPECT_EQ(one->size(), 2u * 2 * 3 * 9);
  EXPECT_THAT(csv, HasSubstr("a100-40gb,small-heavy,pending-0.9,tessera,2,"));
  EXPECT_THAT(csv, HasSubstr("a100-40gb,small-heavy,pending-0.9,upper-bound,2,"));
  EXPECT_THAT(csv, HasSubstr("a100-40gb,small-heavy,steady-0.9,tessera,2,"));
  EXPECT_THAT(csv, HasSubstr("mixed,small-heavy,saturation,reference-pooled-slices,2,"));
  EXPECT_THAT(csv, HasSubstr("mixed,small-heavy,saturation,upper-bound,2,"));
}

// In every cell the upper bound is at or above every policy and the reference: acceptance
// always, demand served at saturation, pods ever placed with the pending queue.
TEST(MigBenchmark, TheUpperBoundIsAtOrAboveEveryColumn) {
  auto records = RunBenchmark(SmallBenchmark(), testing::Catalog());
  ASSERT_TRUE(records.ok());
  const std::vector<SummaryRow> rows = Summarize(records.value());
  int cells = 0;
  for (const SummaryRow& b : rows) {
    if (b.policy != kUpperBound) continue;
    ++cells;
    for (const SummaryRow& r : rows) {
      if (r.fleet != b.fleet || r.workload != b.workload || r.protocol != b.protocol) continue;
      EXPECT_GE(b.acceptance.mean + 1e-9, r.acceptance.mean)
          << b.fleet << " " << b.protocol << " " << r.policy;
      if (b.protocol == "saturation") {
        EXPECT_GE(b.served_slices.mean + 1e-9, r.served_slices.mean) << b.fleet << " " << r.policy;
      }
      EXPECT_GE(b.ever_placed.mean + 1e-9, r.ever_placed.mean)
          << b.fleet << " " << b.protocol << " " << r.policy;
    }
  }
  EXPECT_EQ(cells, 6);  // 2 fleets x 3 protocols
}

TEST(MigBenchmark, ReportShowsEveryPolicyAndTheBound) {
  auto records = RunBenchmark(SmallBenchmark(), testing::Catalog());
  ASSERT_TRUE(records.ok());
  MigReportInput input;
  input.title = "t";
  input.policies = AllPolicyNames();
  input.policies.emplace_back(kReferencePooledSlices);
  input.policies.emplace_back(kUpperBound);
  input.rows = Summarize(records.value());
  input.headline = BuildHeadline(records.value(), kPolicyTessera, FeaturedBaselines());
  const std::string html = RenderMigHtmlReport(input);
  // The difference to the best baseline comes first, one chart per workload and protocol.
  EXPECT_LT(html.find("Results first: tessera minus the best baseline"),
            html.find("<h2>Workload small-heavy"));
  EXPECT_THAT(html, HasSubstr("small-heavy, steady-0.9: tessera - best baseline"));
  EXPECT_THAT(html, HasSubstr("<svg"));
  for (const auto& p : input.policies) EXPECT_THAT(html, HasSubstr(p));
  EXPECT_THAT(html, HasSubstr("Pods ever placed, pending queue"));
  EXPECT_THAT(html, HasSubstr("small-heavy, pending-0.9: pods ever placed"));
}

TEST(MigBenchmark, EveryRunCountsItsRequestsByType) {
  BenchmarkOptions o = SmallBenchmark();
  // Both fleets: saturation and steady state get the LP bound and offline-lp-guided (one node
  // each keeps the latter's search short).
  o.nodes_per_fleet = 1;
  o.placement_bound_max_gpus = 16;
  // Its rows are counted here, not its search.
  o.offline_guide.placers = {"tessera"};
  o.offline_guide.search_requests = 0;
  o.offline_guide.patterns.rounds = 0;
  auto records = RunBenchmark(o, testing::Catalog());
  ASSERT_TRUE(records.ok()) << records.error().message;
  // 2 fleets x 2 seeds x 3 protocols x 9 columns, and the LP bound and offline-lp-guided in 2 of
  // the 3 protocols.
  EXPECT_EQ(records->size(), 2u * 2 * 3 * 9 + 2u * 2 * 2 * 2);
  for (const RunRecord& r : records.value()) {
    SCOPED_TRACE(r.fleet + " " + r.protocol + " " + r.policy);
    EXPECT_EQ(r.type_labels.size(), SmallBenchmark().workloads.front().types.size());
    if (r.policy == kUpperBound || r.policy == kPlacementBound) {
      EXPECT_TRUE(r.metrics.by_type.empty());
      continue;
    }
    EXPECT_LE(r.metrics.by_type.size(), r.type_labels.size());
    TypeOutcome sum;
    for (const TypeOutcome& t : r.metrics.by_type) {
      sum.arrived += t.arrived;
      sum.accepted += t.accepted;
      sum.ever_placed += t.ever_placed;
    }
    EXPECT_EQ(sum.arrived, r.metrics.arrived);
    EXPECT_EQ(sum.accepted, r.metrics.accepted);
    EXPECT_EQ(sum.ever_placed, r.metrics.ever_placed);
  }
}

TEST(MigBenchmark, UnknownFleetIsAnError) {
  BenchmarkOptions o = SmallBenchmark();
  o.fleets = {"tpu"};
  auto r = RunBenchmark(o, testing::Catalog());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("tpu"));
}

// An operator's node policy runs as "tessera:NAME": restating tessera's own (fragmentation alone,
// any positive weight) gives tessera's figures run for run; HAMi's binpack node score is another
// policy, and a name no definition gives is refused.
TEST(MigBenchmark, DefinedNodePoliciesRunAsTesseraUnderThem) {
  BenchmarkOptions o = SmallBenchmark();
  o.node_policies = {sched::ParseNodePolicyDefinition("frag=fragmentation:4").value(),
                     sched::ParseNodePolicyDefinition("pack=hami-node-score:1").value()};
  o.policies = {"tessera", "tessera:frag", "tessera:pack"};
  auto records = RunBenchmark(o, testing::Catalog());
  ASSERT_TRUE(records.ok()) << records.error().message;
  std::map<std::string, std::vector<std::string>> served_by_policy;
  for (const RunRecord& r : records.value()) {
    served_by_policy[r.policy].push_back(r.fleet + "/" + r.protocol + "/" + std::to_string(r.seed) +
                                         ":" + std::to_string(r.metrics.accepted) + "," +
                                         std::to_string(r.metrics.served_slices));
  }
  ASSERT_EQ(served_by_policy["tessera:frag"].size(), served_by_policy["tessera"].size());
  EXPECT_EQ(served_by_policy["tessera:frag"], served_by_policy["tessera"]);
  EXPECT_NE(served_by_policy["tessera:pack"], served_by_policy["tessera"]);

  o.node_policies.clear();
  auto refused = RunBenchmark(o, testing::Catalog());
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message, HasSubstr("unknown MIG policy \"tessera:frag\""));
}

}  // namespace
}  // namespace tessera::sim::mig_replay
