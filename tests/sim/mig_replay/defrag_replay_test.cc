// The defragmentation planner in the pending-queue protocol (defrag_replay.h): a round admits a
// waiting pod only by moving a running one, the evictions per window stay within the budget,
// budget 0 changes nothing, and the same seed gives the same run.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sim/mig_replay/benchmark.h"
#include "sim/mig_replay/defrag_replay.h"
#include "sim/mig_replay/protocol.h"
#include "sim/mig_replay/summary.h"
#include "test_fleet.h"
#include "unit_placer.h"

namespace tessera::sim::mig_replay {
namespace {

Workload OneAndFourSevenths() {
  Workload w;
  w.name = "1g-and-4g";
  w.types = {RequestType{1, 7, 1, "1/7"}, RequestType{4, 7, 1, "4/7"}};
  w.probabilities = {0.5, 0.5};
  return w;
}

// Commits a one-instance pod `key` of `profile` at `start` on GPU `device` of node 0, owned by
// a ReplicaSet (what the `tessera` policy's pods are, so the planner may move it).
void PlaceMovable(MigCluster& cluster, const std::string& key, const std::string& profile,
                  int device, uint32_t start) {
  const int index = testing::Profile(cluster, profile, 0, device);
  ASSERT_GE(index, 0) << profile;
  model::Placement placement;
  placement.start = start;
  placement.size = cluster.nodes()[0]->mig_models[device].profiles()[index].placements.front().size;
  cluster.Commit(key, 0, {InstancePick{device, index, placement}});
  std::optional<state::PodReservation> r = cluster.state().RemovePod(key);
  ASSERT_TRUE(r.has_value());
  r->controller_kind = "ReplicaSet";
  cluster.Reserve(std::move(*r));
}

// Two A100-40GB with a 1g at slice 0 each: a 4g (slices 0-3 only) fits on neither until one of
// the 1g moves to the other GPU.
class FragmentedPair : public ::testing::Test {
 protected:
  FragmentedPair() : cluster_(testing::Nodes("A100-40GB", 2), OneAndFourSevenths()) {
    PlaceMovable(cluster_, ArrivalKey(0), "1g.5gb", 0, 0);
    PlaceMovable(cluster_, ArrivalKey(1), "1g.5gb", 1, 0);
  }
  // p0 and p1 (1g) run; p2 (4g) waits.
  const std::vector<Arrival> arrivals_ = {{0, 0, 10}, {0, 0, 10}, {1, 0.5, 1}};
  MigCluster cluster_;
};

TEST_F(FragmentedPair, TheWaitingPodIsRefusedWithoutAMove) {
  auto policy = MakeMigPolicy(kPolicyTessera, cluster_);
  ASSERT_TRUE(policy.ok());
  EXPECT_FALSE(testing::Place(**policy, cluster_, ArrivalKey(2), 1));
}

TEST_F(FragmentedPair, ADefragRoundMovesOnePodAndAdmitsTheWaitingOne) {
  auto defrag = MakeTesseraDefragmenter(cluster_);
  ASSERT_TRUE(defrag.ok()) << defrag.error().message;
  const std::vector<size_t> waiting = {2};
  const DefragRound round = (*defrag)->Run(waiting, arrivals_, 1);
  EXPECT_THAT(round.admitted, ::testing::ElementsAre(2u));
  EXPECT_EQ(round.evictions, 1);
  EXPECT_EQ(round.moved_served_change, 0);  // a 1g served as a 1g wherever it runs
  // All three run, the 4g at slice 0 of a GPU, both 1g on the other.
  EXPECT_EQ(cluster_.ServedSlices(ArrivalKey(0), 0), 1);
  EXPECT_EQ(cluster_.ServedSlices(ArrivalKey(1), 0), 1);
  EXPECT_EQ(cluster_.ServedSlices(ArrivalKey(2), 1), 4);
  const std::vector<std::string> gpu0 = testing::Instances(cluster_, 0, 0);
  const std::vector<std::string> gpu1 = testing::Instances(cluster_, 0, 1);
  const std::vector<std::string>& with_4g = gpu0.size() == 1 ? gpu0 : gpu1;
  const std::vector<std::string>& with_1g = gpu0.size() == 1 ? gpu1 : gpu0;
  EXPECT_THAT(with_4g, ::testing::ElementsAre("4g.20gb@0"));
  EXPECT_EQ(with_1g.size(), 2u);
}

TEST_F(FragmentedPair, NoEvictionLeftAdmitsNothingAndMovesNothing) {
  auto defrag = MakeTesseraDefragmenter(cluster_);
  ASSERT_TRUE(defrag.ok());
  const std::vector<size_t> waiting = {2};
  const DefragRound round = (*defrag)->Run(waiting, arrivals_, 0);
  EXPECT_TRUE(round.admitted.empty());
  EXPECT_EQ(round.evictions, 0);
  EXPECT_THAT(testing::Instances(cluster_, 0, 0), ::testing::ElementsAre("1g.5gb@0"));
  EXPECT_THAT(testing::Instances(cluster_, 0, 1), ::testing::ElementsAre("1g.5gb@0"));
}

// Reports that each round spent every eviction it was allowed, and records the allowances.
class GreedyDefragmenter : public Defragmenter {
 public:
  DefragRound Run(std::span<const size_t> /*waiting*/, const std::vector<Arrival>& /*arrivals*/,
                  int max_evictions) override {
    allowances.push_back(max_evictions);
    DefragRound round;
    round.evictions = max_evictions;
    return round;
  }
  std::vector<int> allowances;
};

TEST(DefragSchedule, EvictionsInAnyWindowStayWithinTheBudget) {
  UnitPlacer placer(1);
  // p0 holds the only unit throughout; p1 waits from 0.1; the run ends at 3.
  const std::vector<Arrival> arrivals = {At(0, 0, 100), At(0, 0.1, 1), At(0, 3, 1)};
  GreedyDefragmenter defrag;
  DefragSchedule schedule;
  schedule.evictions_per_window = 3;
  schedule.window = 1;
  schedule.interval = 0.25;
  const RunMetrics m = RunPendingQueue(placer, arrivals, 0, true, &defrag, schedule);
  // Rounds at 0.25 (3 spent), then none until those 3 are a window old: 1.25, 2.25.
  EXPECT_THAT(defrag.allowances, ::testing::ElementsAre(3, 3, 3));
  EXPECT_EQ(m.defrag.evictions, 9);
  EXPECT_EQ(m.defrag.rounds, 3);
  EXPECT_DOUBLE_EQ(m.defrag.measured_time, 3);
}

// Units like UnitPlacer, with a capacity a test may raise.
class RoomyPlacer : public Placer {
 public:
  explicit RoomyPlacer(int units) : capacity(units) {}
  bool Place(const std::string& key, int type) override {
    if (used + type + 1 > capacity) return false;
    used += type + 1;
    held[key] = type + 1;
    return true;
  }
  void Release(const std::string& key) override {
    used -= held.at(key);
    held.erase(key);
  }
  int64_t ServedSlices(const std::string& key, int /*type*/) const override {
    return held.contains(key) ? held.at(key) : 0;
  }
  Snapshot Measure() const override { return Snapshot{}; }
  int64_t TotalSlices() const override { return capacity; }
  int capacity;
  int used = 0;
  std::map<std::string, int> held;
};

// Makes room for the oldest waiting request (as a move would) and places it.
class RoomMaker : public Defragmenter {
 public:
  explicit RoomMaker(RoomyPlacer& placer) : placer_(placer) {}
  DefragRound Run(std::span<const size_t> waiting, const std::vector<Arrival>& arrivals,
                  int /*max_evictions*/) override {
    DefragRound round;
    const size_t oldest = waiting.front();
    placer_.capacity += arrivals[oldest].type + 1;
    EXPECT_TRUE(placer_.Place(ArrivalKey(oldest), arrivals[oldest].type));
    round.admitted.push_back(oldest);
    round.evictions = 1;
    return round;
  }

 private:
  RoomyPlacer& placer_;
};

TEST(DefragSchedule, AnAdmittedRequestCountsAsPlacedAtTheRoundAndLeavesALifetimeLater) {
  RoomyPlacer placer(1);
  // p0 holds the unit until 10; p1 waits from 0.1 and is admitted by the round at 0.25, so it
  // leaves at 0.95, not 0.8: p2, arriving at 0.9, waits for it until then. p3 ends the run.
  const std::vector<Arrival> arrivals = {At(0, 0, 10), At(0, 0.1, 0.7), At(0, 0.9, 5), At(1, 2, 1)};
  RoomMaker defrag(placer);
  DefragSchedule schedule;
  schedule.evictions_per_window = 1;
  schedule.window = 1;
  schedule.interval = 0.25;
  const RunMetrics m = RunPendingQueue(placer, arrivals, 0, true, &defrag, schedule);
  EXPECT_EQ(m.defrag.admitted, 1);
  EXPECT_EQ(m.defrag.evictions, 1);
  EXPECT_EQ(m.accepted, 1);  // p0 alone on arrival
  EXPECT_EQ(m.ever_placed, 3);
  EXPECT_NEAR(m.wait_sum, 0.15 + 0.05, 1e-12);
  EXPECT_TRUE(placer.held.contains(ArrivalKey(2)));
  EXPECT_FALSE(placer.held.contains(ArrivalKey(1)));
}

TEST(DefragSchedule, NoRoundWithoutAWaitingRequest) {
  UnitPlacer placer(4);
  const std::vector<Arrival> arrivals = {At(0, 0, 1), At(0, 0.5, 1), At(0, 2, 1)};
  GreedyDefragmenter defrag;
  DefragSchedule schedule;
  schedule.evictions_per_window = 5;
  const RunMetrics m = RunPendingQueue(placer, arrivals, 0, true, &defrag, schedule);
  EXPECT_TRUE(defrag.allowances.empty());
  EXPECT_EQ(m.defrag.rounds, 0);
}

TEST(DefragSchedule, HoursAndMinutesBecomeMeanLifetimes) {
  const DefragSchedule s = MakeDefragSchedule(6, 10, 30);
  EXPECT_EQ(s.evictions_per_window, 6);
  EXPECT_DOUBLE_EQ(s.window, 2);  // an hour is two 30-minute lifetimes
  EXPECT_DOUBLE_EQ(s.interval, 1.0 / 3);
  EXPECT_FALSE(MakeDefragSchedule(0, 10, 60).enabled());
}

TEST(DefragPolicy, NamesCarryTheBudget) {
  EXPECT_EQ(DefragPolicyName(30), "tessera+defrag-30");
  EXPECT_EQ(DefragPolicyBudget("tessera+defrag-30"), 30);
  EXPECT_EQ(DefragPolicyBudget("tessera+defrag-"), std::nullopt);
  EXPECT_EQ(DefragPolicyBudget("tessera+defrag-3x"), std::nullopt);
  EXPECT_EQ(DefragPolicyBudget("tessera"), std::nullopt);
}

Result<RunRecord> PendingRun(const std::string& policy, uint64_t seed) {
  BenchmarkOptions o;
  o.nodes_per_fleet = 2;
  auto nodes = BuildFleetNodes(*FindFleet("a100-40gb"), o.nodes_per_fleet, testing::Catalog());
  EXPECT_TRUE(nodes.ok());
  return RunOne(nodes.value(), "a100-40gb", MakeMemoryMixWorkload(), Protocol{true, 0.9, true},
                policy, seed, o);
}

std::string Summary(RunRecord record) {
  record.policy = "x";  // compare the figures, not the names
  return SummaryCsv(Summarize({record}));
}

TEST(DefragReplay, BudgetZeroIsTesseraExactly) {
  for (uint64_t seed : {42, 43}) {
    auto plain = PendingRun(std::string(kPolicyTessera), seed);
    auto zero = PendingRun(DefragPolicyName(0), seed);
    ASSERT_TRUE(plain.ok() && zero.ok());
    EXPECT_EQ(Summary(*plain), Summary(*zero));
    EXPECT_EQ(plain->metrics.waits_by_type, zero->metrics.waits_by_type);
    EXPECT_EQ(zero->metrics.defrag.rounds, 0);
  }
}

TEST(DefragReplay, SameSeedSameRunAndTheBudgetHolds) {
  auto first = PendingRun(DefragPolicyName(30), 42);
  auto again = PendingRun(DefragPolicyName(30), 42);
  auto plain = PendingRun(std::string(kPolicyTessera), 42);
  ASSERT_TRUE(first.ok() && again.ok() && plain.ok());
  EXPECT_EQ(Summary(*first), Summary(*again));
  EXPECT_EQ(first->metrics.waits_by_type, again->metrics.waits_by_type);
  EXPECT_EQ(first->metrics.defrag.evictions, again->metrics.defrag.evictions);
  EXPECT_EQ(first->metrics.defrag.admitted, again->metrics.defrag.admitted);
  // The small fleet fragments: defragmentation admits pods and changes the run.
  EXPECT_GT(first->metrics.defrag.evictions, 0);
  EXPECT_GT(first->metrics.defrag.admitted, 0);
  EXPECT_NE(Summary(*first), Summary(*plain));
  // 30 per hour, a mean lifetime being an hour: at most 30 per lifetime of the window, plus
  // one window's worth at its start.
  const double hours = first->metrics.defrag.measured_time;
  EXPECT_LE(static_cast<double>(first->metrics.defrag.evictions), 30 * (hours + 1));
}

TEST(DefragReplay, OnlyUnderThePendingQueue) {
  BenchmarkOptions o;
  o.nodes_per_fleet = 1;
  auto nodes = BuildFleetNodes(*FindFleet("a100-40gb"), 1, testing::Catalog());
  ASSERT_TRUE(nodes.ok());
  auto run = RunOne(nodes.value(), "a100-40gb", MakeMultiSmallWorkload(),
                    Protocol{true, 0.9, false}, DefragPolicyName(6), 42, o);
  EXPECT_FALSE(run.ok());
}

}  // namespace
}  // namespace tessera::sim::mig_replay
