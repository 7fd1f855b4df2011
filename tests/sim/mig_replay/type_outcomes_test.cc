// Each protocol's counts per request type (RunMetrics::by_type) and their CSV (TypesCsv).

#include <gtest/gtest.h>

#include <ostream>
#include <vector>

#include "sim/mig_replay/benchmark.h"
#include "sim/mig_replay/protocol.h"
#include "sim/mig_replay/summary.h"
#include "unit_placer.h"

namespace tessera::sim::mig_replay {
namespace {

TypeOutcome Outcome(const RunMetrics& m, int type) {
  return static_cast<size_t>(type) < m.by_type.size() ? m.by_type[type] : TypeOutcome{};
}

}  // namespace

// Readable failures: {arrived, accepted, ever_placed}.
void PrintTo(const TypeOutcome& o, std::ostream* os) {
  *os << "{arrived " << o.arrived << ", accepted " << o.accepted << ", ever placed "
      << o.ever_placed << "}";
}

namespace {

TEST(TypeOutcomes, SaturationCountsTheUnseenRestOfTheStreamAsArrived) {
  UnitPlacer placer(3);
  // p0 (1 unit) and p1 (2 units) fill the cluster; p2 and p3 are refused, which ends the run;
  // p4 and p5 are never tried but arrived.
  const std::vector<Arrival> arrivals = {At(0, 0, 0), At(1, 0, 0), At(0, 0, 0),
                                         At(1, 0, 0), At(2, 0, 0), At(0, 0, 0)};
  const RunMetrics m = RunSaturation(placer, arrivals, 2);
  EXPECT_EQ(Outcome(m, 0), (TypeOutcome{3, 1, 0}));
  EXPECT_EQ(Outcome(m, 1), (TypeOutcome{2, 1, 0}));
  EXPECT_EQ(Outcome(m, 2), (TypeOutcome{1, 0, 0}));
  EXPECT_EQ(m.arrived, 6);
  EXPECT_EQ(m.accepted, 2);
}

TEST(TypeOutcomes, SteadyStateCountsOnlyTheMeasuredArrivals) {
  UnitPlacer placer(2);
  // p0 (warm-up) holds a unit throughout; p1 (2 units) does not fit; p2 takes the other unit;
  // p3 finds none.
  const std::vector<Arrival> arrivals = {At(0, 0, 10), At(1, 1, 1), At(0, 2, 1), At(0, 2.5, 1)};
  const RunMetrics m = RunSteadyState(placer, arrivals, 1);
  EXPECT_EQ(Outcome(m, 0), (TypeOutcome{2, 1, 0}));
  EXPECT_EQ(Outcome(m, 1), (TypeOutcome{1, 0, 0}));
  EXPECT_EQ(m.arrived, 3);
  EXPECT_EQ(m.accepted, 1);
}

TEST(TypeOutcomes, PendingQueueCountsPlacementsOnArrivalAndAfterWaiting) {
  UnitPlacer placer(2);
  // p0 (2 units) until t=2; p1 waits and gets in at t=2; p2 is placed on arrival; p3 (2 units)
  // still waits at the end.
  const std::vector<Arrival> arrivals = {At(1, 0, 2), At(0, 1, 0.5), At(0, 2.4, 1), At(1, 2.6, 1)};
  const RunMetrics m = RunPendingQueue(placer, arrivals, 0);
  EXPECT_EQ(Outcome(m, 0), (TypeOutcome{2, 1, 2}));
  EXPECT_EQ(Outcome(m, 1), (TypeOutcome{2, 1, 1}));
  EXPECT_EQ(m.ever_placed, 3);
}

RunRecord Record(const std::string& policy, uint64_t seed, std::vector<TypeOutcome> by_type) {
  RunRecord r;
  r.fleet = "a100-40gb";
  r.workload = "memory-mix";
  r.protocol = "pending-1.2";
  r.policy = policy;
  r.seed = seed;
  r.metrics.by_type = std::move(by_type);
  r.type_labels = {"4000MiB", "40000MiB x2"};
  return r;
}

TEST(TypeOutcomes, CsvSumsTheSeedsPerTypeAndLeavesOutTheBounds) {
  const std::vector<RunRecord> records = {
      Record("tessera", 42, {{10, 8, 9}, {4, 1, 2}}),
      Record("tessera", 43, {{6, 6, 6}}),  // type 1 never arrived in this run
      Record("upper-bound", 42, {}),
      Record("first-fit", 42, {{5, 0, 0}, {0, 0, 0}}),
  };
  EXPECT_EQ(TypesCsv(records),
            "fleet,workload,protocol,policy,n_seeds,type,arrived,accepted,accepted_pct,"
            "ever_placed,ever_placed_pct,never_placed_pct,wait_p95\n"
            "a100-40gb,memory-mix,pending-1.2,tessera,2,4000MiB,16,14,87.5000,15,93.7500,6.2500,"
            "0.0000\n"
            "a100-40gb,memory-mix,pending-1.2,tessera,2,40000MiB x2,4,1,25.0000,2,50.0000,50.0000,"
            "0.0000\n"
            "a100-40gb,memory-mix,pending-1.2,first-fit,1,4000MiB,5,0,0.0000,0,0.0000,100.0000,"
            "0.0000\n"
            "a100-40gb,memory-mix,pending-1.2,first-fit,1,40000MiB x2,0,0,0.0000,0,0.0000,0.0000,"
            "0.0000\n");
}

}  // namespace
}  // namespace tessera::sim::mig_replay
