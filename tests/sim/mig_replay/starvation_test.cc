// Starvation per request type (starvation.h): the fraction of a type's pods never placed and the
// nearest-rank 95th percentile of their waits, with the waits of pods never placed censored at the
// run's end (RunPendingQueue), pooled over the seeds; and their columns in types.csv.

#include "sim/mig_replay/starvation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/mig_replay/protocol.h"
#include "sim/mig_replay/summary.h"
#include "unit_placer.h"

namespace tessera::sim::mig_replay {
namespace {

TEST(Starvation, NearestRankPercentile) {
  EXPECT_EQ(NearestRankPercentile({}, 95), 0);
  EXPECT_EQ(NearestRankPercentile({3}, 95), 3);
  // n = 10: rank ceil(9.5) = 10, the largest.
  EXPECT_EQ(NearestRankPercentile({10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, 95), 10);
  // n = 20: rank ceil(19) = 19.
  std::vector<double> twenty;
  for (int i = 20; i >= 1; --i) twenty.push_back(i);
  EXPECT_EQ(NearestRankPercentile(twenty, 95), 19);
  EXPECT_EQ(NearestRankPercentile(twenty, 50), 10);
  EXPECT_EQ(NearestRankPercentile(twenty, 100), 20);
  EXPECT_EQ(NearestRankPercentile(twenty, 1), 1);
}

TEST(Starvation, PendingQueueRecordsWaitsAndCensorsThoseNeverPlaced) {
  UnitPlacer placer(2);
  // p0 (warm-up, 2 units) until t=3. p1 (1 unit, t=1) is placed at 3 (wait 2) and leaves at 4;
  // p2 (2 units, t=2) is placed then (wait 2) and stays to 14; p3 (t=5) and p4 (t=8) still wait
  // when the run ends at t=8: censored waits 3 and 0.
  const std::vector<Arrival> arrivals = {At(1, 0, 3), At(0, 1, 1), At(1, 2, 10), At(0, 5, 1),
                                         At(0, 8, 1)};
  const RunMetrics m = RunPendingQueue(placer, arrivals, 1);
  ASSERT_EQ(m.waits_by_type.size(), 2u);
  EXPECT_THAT(m.waits_by_type[0], ::testing::ElementsAre(2, 3, 0));
  EXPECT_THAT(m.waits_by_type[1], ::testing::ElementsAre(2));
  EXPECT_EQ(m.by_type[0].arrived, 3);
  EXPECT_EQ(m.by_type[0].ever_placed, 1);
  EXPECT_EQ(m.by_type[1].ever_placed, 1);
  EXPECT_DOUBLE_EQ(m.wait_sum, 4);  // the censored waits are not in the mean wait
}

TEST(Starvation, StreamProtocolsRecordNoWaits) {
  UnitPlacer placer(2);
  const std::vector<Arrival> arrivals = {At(1, 0, 3), At(0, 1, 1), At(1, 2, 10)};
  EXPECT_TRUE(RunSteadyState(placer, arrivals, 0).waits_by_type.empty());
  UnitPlacer fresh(2);
  EXPECT_TRUE(RunSaturation(fresh, arrivals, 0).waits_by_type.empty());
}

RunRecord Record(const std::string& protocol, const std::string& policy, uint64_t seed,
                 std::vector<TypeOutcome> by_type, std::vector<std::vector<float>> waits) {
  RunRecord r;
  r.fleet = "a100-40gb";
  r.workload = "multi-small";
  r.protocol = protocol;
  r.policy = policy;
  r.seed = seed;
  r.metrics.by_type = std::move(by_type);
  r.metrics.waits_by_type = std::move(waits);
  r.type_labels = {"1/7", "1/7 x4", "7/7"};
  return r;
}

std::vector<float> Range(int from, int to) {
  std::vector<float> out;
  for (int i = from; i <= to; ++i) out.push_back(static_cast<float>(i));
  return out;
}

std::vector<RunRecord> Records() {
  // pending-1.2, tessera: type 0 pools the waits 1..20 of two seeds (p95: the 19th); type 1 had
  // one pod placed at once and 19 never placed, waiting 5 when the run ended (p95: 5, not 0);
  // type 2 never arrived.
  return {
      Record("pending-1.2", "tessera", 42, {{10, 8, 10}, {10, 1, 1}}, {Range(1, 10), {0}}),
      Record("pending-1.2", "tessera", 43, {{10, 9, 10}, {10, 0, 0}, {0, 0, 0}},
             {Range(11, 20), std::vector<float>(10, 5.0F)}),
      Record("pending-1.2", "upper-bound", 42, {}, {}),
      // steady-0.9: never placed = refused on arrival; no wait.
      Record("steady-0.9", "tessera", 42, {{8, 6, 0}, {4, 1, 0}, {2, 2, 0}}, {}),
  };
}

TEST(Starvation, PooledOverSeedsWithCensoredWaits) {
  const std::vector<RunRecord> records = Records();
  const std::vector<TypeStarvation> s =
      StarvationByType(records, "a100-40gb", "multi-small", "pending-1.2", "tessera");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].label, "1/7");
  EXPECT_EQ(s[0].arrived, 20);
  EXPECT_EQ(s[0].never_placed, 0);
  EXPECT_DOUBLE_EQ(s[0].never_placed_pct, 0);
  EXPECT_TRUE(s[0].has_wait);
  EXPECT_DOUBLE_EQ(s[0].wait_p95, 19);
  EXPECT_EQ(s[1].label, "1/7 x4");
  EXPECT_EQ(s[1].arrived, 20);
  EXPECT_EQ(s[1].never_placed, 19);
  EXPECT_DOUBLE_EQ(s[1].never_placed_pct, 95);
  EXPECT_DOUBLE_EQ(s[1].wait_p95, 5);
  EXPECT_EQ(s[2].arrived, 0);
  EXPECT_DOUBLE_EQ(s[2].never_placed_pct, 0);
  EXPECT_DOUBLE_EQ(s[2].wait_p95, 0);
  EXPECT_DOUBLE_EQ(
      WorstNeverPlacedPct(records, "a100-40gb", "multi-small", "pending-1.2", "tessera"), 95);
}

TEST(Starvation, StreamProtocolsCountRefusalsAndHaveNoWait) {
  const std::vector<RunRecord> records = Records();
  const std::vector<TypeStarvation> s =
      StarvationByType(records, "a100-40gb", "multi-small", "steady-0.9", "tessera");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0].never_placed_pct, 25);
  EXPECT_DOUBLE_EQ(s[1].never_placed_pct, 75);
  EXPECT_DOUBLE_EQ(s[2].never_placed_pct, 0);
  for (const TypeStarvation& t : s) {
    EXPECT_FALSE(t.has_wait);
    EXPECT_EQ(t.wait_p95, 0);
  }
  EXPECT_DOUBLE_EQ(
      WorstNeverPlacedPct(records, "a100-40gb", "multi-small", "steady-0.9", "tessera"), 75);
}

TEST(Starvation, BoundsAndUnknownCellsHaveNone) {
  const std::vector<RunRecord> records = Records();
  EXPECT_TRUE(
      StarvationByType(records, "a100-40gb", "multi-small", "pending-1.2", "upper-bound").empty());
  EXPECT_TRUE(StarvationByType(records, "mixed", "multi-small", "pending-1.2", "tessera").empty());
  EXPECT_EQ(WorstNeverPlacedPct(records, "mixed", "multi-small", "pending-1.2", "tessera"), 0);
}

TEST(Starvation, TypesCsvColumns) {
  EXPECT_EQ(TypesCsv(Records()),
            "fleet,workload,protocol,policy,n_seeds,type,arrived,accepted,accepted_pct,"
            "ever_placed,ever_placed_pct,never_placed_pct,wait_p95\n"
            "a100-40gb,multi-small,pending-1.2,tessera,2,1/7,20,17,85.0000,20,100.0000,0.0000,"
            "19.0000\n"
            "a100-40gb,multi-small,pending-1.2,tessera,2,1/7 x4,20,1,5.0000,1,5.0000,95.0000,"
            "5.0000\n"
            "a100-40gb,multi-small,pending-1.2,tessera,2,7/7,0,0,0.0000,0,0.0000,0.0000,0.0000\n"
            "a100-40gb,multi-small,steady-0.9,tessera,1,1/7,8,6,75.0000,0,0.0000,25.0000,\n"
            "a100-40gb,multi-small,steady-0.9,tessera,1,1/7 x4,4,1,25.0000,0,0.0000,75.0000,\n"
            "a100-40gb,multi-small,steady-0.9,tessera,1,7/7,2,2,100.0000,0,0.0000,0.0000,\n");
}

}  // namespace
}  // namespace tessera::sim::mig_replay
