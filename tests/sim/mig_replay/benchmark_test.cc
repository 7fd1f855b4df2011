#include "sim/mig_replay/benchmark.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/mig_replay/geometry_free.h"
#include "sim/mig_replay/report.h"
#include "sim/mig_replay/summary.h"
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
  // 2 fleets x 1 workload x 2 protocols x (7 policies + bound) x 2 seeds.
  EXPECT_EQ(one->size(), 2u * 2 * 8 * 2);
  EXPECT_THAT(csv, HasSubstr("a100-40gb,small-heavy,steady-0.9,tessera,2,"));
  EXPECT_THAT(csv, HasSubstr("mixed,small-heavy,saturation,bound-geometry-free,2,"));
}

TEST(MigBenchmark, ReportShowsEveryPolicyAndTheBound) {
  auto records = RunBenchmark(SmallBenchmark(), testing::Catalog());
  ASSERT_TRUE(records.ok());
  MigReportInput input;
  input.title = "t";
  input.policies = AllPolicyNames();
  input.policies.emplace_back(kBoundGeometryFree);
  input.rows = Summarize(records.value());
  const std::string html = RenderMigHtmlReport(input);
  EXPECT_THAT(html, HasSubstr("<svg"));
  for (const auto& p : input.policies) EXPECT_THAT(html, HasSubstr(p));
}

TEST(MigBenchmark, UnknownFleetIsAnError) {
  BenchmarkOptions o = SmallBenchmark();
  o.fleets = {"tpu"};
  auto r = RunBenchmark(o, testing::Catalog());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("tpu"));
}

TEST(MigBenchmark, StatsAreMeanAndSampleStd) {
  const MeanStd m = StatsOf({1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  EXPECT_NEAR(m.std, 1.2909944, 1e-6);
  EXPECT_EQ(StatsOf({5}).std, 0);
}

}  // namespace
}  // namespace tessera::sim::mig_replay
