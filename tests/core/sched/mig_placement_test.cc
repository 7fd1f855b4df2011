// Demand-aware MIG placement: the mix, the prior, the node score and the profile choice.
#include "core/sched/mig_placement.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "core/mig/catalog.h"
#include "core/sched/scheduler.h"
#include "support/builders.h"

namespace tessera::sched {
namespace {

using testing::A100Mig;
using testing::NodeWith;
using testing::PodBuilder;

TEST(MigDemandMixTest, RecentRequestsOutweighOldOnes) {
  MigDemandMix mix(0.5);
  mix.Observe(MigDemandKey{4000, 0, 0});
  mix.Observe(MigDemandKey{19000, 0, 0});
  auto entries = mix.Entries();
  ASSERT_EQ(entries.size(), 2U);
  // Decay 0.5 per observation: the older one counts half.
  EXPECT_DOUBLE_EQ(entries[0].second, 0.5);
  EXPECT_DOUBLE_EQ(entries[1].second, 1.0);
  EXPECT_DOUBLE_EQ(mix.total(), 1.5);
}

TEST(MigDemandMixTest, KeepsAtMostMaxKindsDroppingTheRarest) {
  MigDemandMix mix(1.0, 2);
  mix.Observe(MigDemandKey{1000, 0, 0}, 3);
  mix.Observe(MigDemandKey{2000, 0, 0}, 1);
  mix.Observe(MigDemandKey{3000, 0, 0}, 2);
  auto entries = mix.Entries();
  ASSERT_EQ(entries.size(), 2U);
  EXPECT_EQ(entries[0].first.mem_mib, 1000);
  EXPECT_EQ(entries[1].first.mem_mib, 3000);
  EXPECT_DOUBLE_EQ(mix.total(), 5);
}

TEST(MigPriorTest, ParsesSizesAndRejectsNonsense) {
  auto prior = ParseMigPrior("1g=4, 3g=1,7g=0.5", 8);
  ASSERT_TRUE(prior.ok()) << prior.error().message;
  EXPECT_DOUBLE_EQ(prior->by_slices.at(1), 4);
  EXPECT_DOUBLE_EQ(prior->by_slices.at(7), 0.5);
  EXPECT_TRUE(ParseMigPrior("", 8).ok());
  for (const char* bad : {"1g", "g=1", "1x=2", "1g=-1", "1g=abc", "1g=0", "0g=1"}) {
    auto r = ParseMigPrior(bad, 8);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("MIG prior"), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(ParseMigPrior("1g=1", -1).ok());
}

TEST(MigWeightsTest, PriorAndObservationsCombine) {
  model::GpuDevice device = A100Mig("GPU-a");
  mig::GpuMigModel model(device, nullptr);
  MigDemandMix mix(1.0);
  mix.Observe(MigDemandKey{4000, 0, 0}, 2);  // -> 1g.5gb
  auto prior = ParseMigPrior("1g=1,7g=1", 2);
  ASSERT_TRUE(prior.ok());
  MigWeights weights(mix, *prior);
  const std::vector<double> w = weights.Shares(model);
  // (2 x 1/2 + 2) / (2 + 2) for 1g.5gb, (2 x 1/2) / 4 for 7g.
  EXPECT_DOUBLE_EQ(w[model.ProfileIndex("1g.5gb")], 0.75);
  EXPECT_DOUBLE_EQ(w[model.ProfileIndex("7g.40gb")], 0.25);
  EXPECT_DOUBLE_EQ(w[model.ProfileIndex("3g.20gb")], 0);
  EXPECT_DOUBLE_EQ(w[model.ProfileIndex("1g.10gb")], 0);  // 1g, but not the smallest
  // What placeability counts: the share times the GiB of the profile's memory slices.
  const auto& value = weights.For(model);
  EXPECT_DOUBLE_EQ(value[model.ProfileIndex("1g.5gb")], 0.75 * 1 * model.SliceGib());
  EXPECT_DOUBLE_EQ(value[model.ProfileIndex("7g.40gb")], 0.25 * 8 * model.SliceGib());
}

TEST(MigWeightsTest, UnitsFollowWhatTheRequestsName) {
  mig::GpuMigModel a100(A100Mig("GPU-a"), nullptr);                // 8 memory slices of about 5 GiB
  mig::GpuMigModel rtx(testing::RtxPro6000Mig("GPU-r"), nullptr);  // 12 of about 8 GiB
  auto no_prior = ParseMigPrior("", 0);
  ASSERT_TRUE(no_prior.ok());
  const int a100_1g = a100.ProfileIndex("1g.5gb");
  const int rtx_1g = rtx.ProfileIndex("1g.24gb");  // 3 memory slices

  // A percentage: a profile is worth its fraction of the GPU (a whole GPU as kGpuAsGib), on
  // every model alike; so is a stranded slice.
  MigDemandMix fractions(1.0);
  fractions.Observe(MigDemandKey{0, 10, 0}, 4);  // -> 1g.5gb on the A100, 1g.24gb on the RTX
  const MigWeights by_fraction(fractions, *no_prior);
  EXPECT_DOUBLE_EQ(by_fraction.For(a100)[a100_1g], 1.0 / 8 * MigWeights::kGpuAsGib);
  EXPECT_DOUBLE_EQ(by_fraction.For(rtx)[rtx_1g], 3.0 / 12 * MigWeights::kGpuAsGib);
  EXPECT_DOUBLE_EQ(by_fraction.Stranded(a100).memory, MigWeights::kGpuAsGib / 8);
  EXPECT_DOUBLE_EQ(by_fraction.Stranded(rtx).memory, MigWeights::kGpuAsGib / 12);
  EXPECT_DOUBLE_EQ(by_fraction.Stranded(a100).idle_compute, 0);  // no whole-GPU requests

  // Memory: a profile is worth the GiB of its slices; a stranded slice twice its GiB.
  MigDemandMix memory(1.0);
  memory.Observe(MigDemandKey{4000, 0, 0}, 4);
  const MigWeights by_memory(memory, *no_prior);
  EXPECT_DOUBLE_EQ(by_memory.For(a100)[a100_1g], a100.SliceGib());
  EXPECT_DOUBLE_EQ(by_memory.For(rtx)[rtx_1g], 3 * rtx.SliceGib());
  EXPECT_DOUBLE_EQ(by_memory.Stranded(rtx).memory, 2 * rtx.SliceGib());
  EXPECT_DOUBLE_EQ(by_memory.Stranded(rtx).idle_compute, 0);

  // Both kinds: the units blend by request count (one memory request, three percentages).
  MigDemandMix both(1.0);
  both.Observe(MigDemandKey{4000, 0, 0}, 1);
  both.Observe(MigDemandKey{0, 10, 0}, 3);
  const MigWeights blended(both, *no_prior);
  // A stranded slice weighs twice for the memory request's quarter.
  const double unit = (1 * a100.SliceGib() + 3 * MigWeights::kGpuAsGib / 8) / 4;
  EXPECT_DOUBLE_EQ(blended.Stranded(a100).memory, unit * 1.25);
  EXPECT_DOUBLE_EQ(blended.For(a100)[a100_1g], 1.0 * unit);  // every request takes the 1g

  // Nothing seen yet: GiB, as for memory requests.
  const MigWeights unseen(MigDemandMix(1.0), *no_prior);
  EXPECT_DOUBLE_EQ(unseen.Stranded(a100).memory, 2 * a100.SliceGib());
}

// An H100-SXM5-80GB's MIG rules from the built-in catalog (without a layout table).
mig::GpuMigModel BuiltinH100() {
  auto catalog = mig::GpuModelCatalog::Builtin();
  if (!catalog.ok() || catalog->Find("H100-SXM5-80GB") == nullptr) {
    ADD_FAILURE() << "no H100-SXM5-80GB in the built-in catalog";
    std::abort();
  }
  return mig::GpuMigModel(testing::MigDeviceOf(*catalog->Find("H100-SXM5-80GB"), "GPU-h"), nullptr);
}

// A stranded slice whose compute stays usable is discounted by the share of requests for a
// fraction of a GPU times the square of the whole-GPU share; memory requests get no discount
// (their stranded slice weighs twice), and a slice that idles compute too costs the full
// value either way.
TEST(MigWeightsTest, StrandedMemoryIsDiscountedWhenWholeGpuFractionsDominate) {
  const mig::GpuMigModel h100 = BuiltinH100();
  const auto no_prior = ParseMigPrior("", 0);
  ASSERT_TRUE(no_prior.ok());
  const double unit = MigWeights::kGpuAsGib / 8;

  MigDemandMix fractions(1.0);
  fractions.Observe(MigDemandKey{0, 100, 0}, 3);  // 7g.80gb: the whole GPU
  fractions.Observe(MigDemandKey{0, 10, 0}, 1);   // 1g.10gb
  const MigWeights mostly_whole(fractions, *no_prior);
  EXPECT_DOUBLE_EQ(MigWeights::WholeGpuShare(h100, mostly_whole.Shares(h100)), 0.75);
  const mig::StrandedValue value = mostly_whole.Stranded(h100);
  EXPECT_DOUBLE_EQ(value.memory, unit * (1 - 0.75 * 0.75));
  EXPECT_DOUBLE_EQ(value.memory + value.idle_compute, unit);

  // A quarter of the requests name memory: only the fractions' part is discounted, and that
  // quarter weighs a stranded slice twice.
  MigDemandMix both(1.0);
  both.Observe(MigDemandKey{0, 100, 0}, 3);
  both.Observe(MigDemandKey{9000, 0, 0}, 1);  // 1g.10gb
  const MigWeights blended(both, *no_prior);
  const double blended_unit = (1 * h100.SliceGib() + 3 * unit) / 4 * 1.25;
  const double discount = 0.75 * std::pow(0.75, 2);
  EXPECT_DOUBLE_EQ(blended.Stranded(h100).memory, blended_unit * (1 - discount));
  EXPECT_DOUBLE_EQ(blended.Stranded(h100).idle_compute, blended_unit * discount);

  // Only memory requests, most of them whole GPUs: every stranded slice costs twice its GiB.
  MigDemandMix memory(1.0);
  memory.Observe(MigDemandKey{80000, 0, 0}, 3);
  memory.Observe(MigDemandKey{9000, 0, 0}, 1);
  const MigWeights by_memory(memory, *no_prior);
  EXPECT_DOUBLE_EQ(by_memory.Stranded(h100).memory, 2 * h100.SliceGib());
  EXPECT_DOUBLE_EQ(by_memory.Stranded(h100).idle_compute, 0);
}

// The stranded-slice cost is whole until pods leave, then scaled by (1 - churn) x
// fullness^(4 x churn) for the GPU's model where it is not heading for full; a model the signals
// do not know counts as full.
TEST(MigFleetSignalsTest, StrandedScaleFollowsChurnAndHowFullTheModelIs) {
  int a_rules = 0;
  int b_rules = 0;
  MigFleetSignals signals;
  signals.models[&a_rules].fullness = 0.5;
  signals.models[&b_rules].fullness = 0.25;
  EXPECT_DOUBLE_EQ(signals.StrandedScale(&a_rules), 1);  // nothing has left
  signals.churn = 0.5;
  EXPECT_DOUBLE_EQ(signals.StrandedScale(&a_rules), 0.5 * std::pow(0.5, 2));
  EXPECT_DOUBLE_EQ(signals.StrandedScale(&b_rules), 0.5 * std::pow(0.25, 2));
  EXPECT_DOUBLE_EQ(signals.StrandedScale(nullptr), 0.5);
  signals.churn = 1;
  EXPECT_DOUBLE_EQ(signals.StrandedScale(nullptr), 0);

  const mig::GpuMigModel h100 = BuiltinH100();
  const auto no_prior = ParseMigPrior("", 0);
  ASSERT_TRUE(no_prior.ok());
  MigDemandMix memory(1.0);
  memory.Observe(MigDemandKey{9000, 0, 0}, 1);
  MigFleetSignals leaving;
  leaving.churn = 0.5;
  leaving.models[h100.RulesIdentity()].fullness = 0.5;
  const MigWeights whole(memory, *no_prior);
  const MigWeights scaled(memory, *no_prior, leaving);
  EXPECT_DOUBLE_EQ(whole.Stranded(h100).memory, 2 * h100.SliceGib());
  EXPECT_DOUBLE_EQ(scaled.Stranded(h100).memory, 2 * h100.SliceGib() * 0.125);
}

// FillReached inverts churn = 1 - (1 - e^-x) / x, the share of the pods placed that have left
// after x mean lifetimes of a steady stream from empty, into 1 - e^-x, the share of the long-run
// fill then resident.
TEST(MigFleetSignalsTest, FillReachedInvertsTheChurnOfGpusFilledFromEmpty) {
  EXPECT_EQ(FillReached(0), 0);
  EXPECT_EQ(FillReached(-0.5), 0);
  EXPECT_EQ(FillReached(1), 1);
  double previous = 0;
  for (const double x : {1e-6, 0.01, 0.3, 1.0, 2.5, 10.0, 30.0}) {
    const double resident = -std::expm1(-x) / x;
    const double reached = FillReached(1 - resident);
    EXPECT_NEAR(reached, -std::expm1(-x), 1e-9 * -std::expm1(-x)) << "after " << x << " lifetimes";
    EXPECT_GT(reached, previous) << "after " << x << " lifetimes";
    previous = reached;
  }
  EXPECT_DOUBLE_EQ(FillReached(1 - 1.0 / 1000), 1);  // 1000 lifetimes: 1 - e^-1000
}

// Where the fullness a model is heading for (its fullness over FillReached(churn)) reaches 1,
// requests will wait for a stranded slice: it costs whole however many pods have left, less the
// share of the mix that takes whole GPUs (they never use it). Short of full the scale is the
// larger of the churn rule and heading^20.
TEST(MigFleetSignalsTest, StrandedSlicesCostWholeWhereTheGpusAreHeadingForFull) {
  int rules = 0;
  MigFleetSignals signals;
  signals.churn = 0.5;
  const double reached = FillReached(0.5);
  ASSERT_GT(reached, 0.7);  // 1 - e^-x for x = 1.59 mean lifetimes
  ASSERT_LT(reached, 0.9);
  signals.models[&rules].fullness = reached;
  EXPECT_DOUBLE_EQ(signals.StrandedScale(&rules), 1);
  signals.models[&rules].fullness = 1;
  EXPECT_DOUBLE_EQ(signals.StrandedScale(&rules), 1);
  // A quarter of the mix takes whole GPUs: three quarters of the price, still above the churn
  // rule (0.5 x 1^2), and the churn rule where whole GPUs are all the mix takes.
  EXPECT_DOUBLE_EQ(signals.StrandedScale(&rules, 0.25), 0.75);
  EXPECT_DOUBLE_EQ(signals.StrandedScale(&rules, 1.0), 0.5);
  // Heading for 90%: the churn rule is the larger.
  signals.models[&rules].fullness = 0.9 * reached;
  EXPECT_DOUBLE_EQ(signals.StrandedScale(&rules), 0.5 * std::pow(0.9 * reached, 2));
  // Later, nearly full: heading^20 is the larger.
  signals.churn = 0.8;
  const double later = FillReached(0.8);
  signals.models[&rules].fullness = 0.96;
  EXPECT_DOUBLE_EQ(signals.StrandedScale(&rules), std::pow(0.96 / later, 20));
  EXPECT_GT(signals.StrandedScale(&rules), 0.2 * std::pow(0.96, 4 * 0.8));
}

// Room for a profile is worth its value once pods leave only as far as the instances expected
// before the free memory is taken fill it: 1 - churn x (1 - min(1, expected / room)), with
// expected = share x free slices / the mix's mean slices per instance.
TEST(MigFleetSignalsTest, RoomUseDiscountsRoomTheRequestsToComeWillNotTake) {
  const mig::GpuMigModel a100(A100Mig("GPU-a"), nullptr);  // its rules identify it
  const int one_g = a100.ProfileIndex("1g.5gb");
  const int whole = a100.ProfileIndex("7g.40gb");
  ASSERT_GE(one_g, 0);
  ASSERT_GE(whole, 0);
  std::vector<double> shares(a100.profiles().size(), 0.0);
  shares[one_g] = 0.75;  // 1 memory slice each
  shares[whole] = 0.25;  // 8 memory slices each: 2.75 slices per instance on average
  MigFleetSignals signals;
  MigFleetSignals::Model& model = signals.models[a100.RulesIdentity()];
  model.free_slices = 22;  // 8 instances to come: 6 of 1g, 2 of 7g
  model.room[one_g] = 30;  // far more room for 1g than they will take
  model.room[whole] = 1;   // less room for a whole GPU than is asked for
  // Nothing has left: room is worth its value.
  for (double use : signals.RoomUse(a100, shares)) EXPECT_DOUBLE_EQ(use, 1);
  signals.churn = 0.5;
  std::vector<double> use = signals.RoomUse(a100, shares);
  EXPECT_DOUBLE_EQ(use[one_g], 1 - 0.5 * (1 - 6.0 / 30));
  EXPECT_DOUBLE_EQ(use[whole], 1);
  signals.churn = 1;
  use = signals.RoomUse(a100, shares);
  EXPECT_DOUBLE_EQ(use[one_g], 0.2);
  EXPECT_DOUBLE_EQ(use[whole], 1);
  // A model the signals do not know keeps its room's value.
  EXPECT_EQ(signals.RoomUse(BuiltinH100(), std::vector<double>(shares.size(), 0.5)),
            std::vector<double>(shares.size(), 1.0));

  // MigWeights applies it to the room's value and to nothing else.
  const auto no_prior = ParseMigPrior("", 0);
  ASSERT_TRUE(no_prior.ok());
  MigDemandMix mix(1.0);
  mix.Observe(MigDemandKey{4000, 0, 0}, 3);
  mix.Observe(MigDemandKey{40000, 0, 0}, 1);
  const MigWeights plain(mix, *no_prior);
  const MigWeights discounted(mix, *no_prior, signals);
  EXPECT_DOUBLE_EQ(discounted.For(a100)[one_g], plain.For(a100)[one_g] * 0.2);
  EXPECT_DOUBLE_EQ(discounted.For(a100)[whole], plain.For(a100)[whole]);
}

class MigNodeScoringTest : public ::testing::Test {
 protected:
  MigNodeScoringTest() : state_(config::SchedulerConfig{}) {}

  void AddNode(const std::string& name, int gpus) {
    std::vector<model::GpuDevice> devices;
    devices.reserve(static_cast<size_t>(gpus));
    for (int g = 0; g < gpus; ++g) {
      devices.push_back(A100Mig(name + "-GPU-" + std::to_string(g), g));
    }
    state_.UpsertNode(NodeWith(name, devices));
  }

  state::ClusterState state_;
};

// FGD's idea on MIG layouts: the 1g goes to the GPU that already holds a 1g (its placeability
// drops by one 1g), not to the empty node (which would lose its 7g as well), even though the
// empty node comes first by name.
TEST_F(MigNodeScoringTest, SmallRequestJoinsAPartlyUsedGpuToKeepWholeGpusWhole) {
  AddNode("a-empty", 1);
  AddNode("b-used", 1);
  PolicyDefaults defaults;
  defaults.mig_prior = *ParseMigPrior("1g=1,7g=1", 8);
  Scheduler scheduler(state_, defaults);
  std::vector<std::string> only_b = {"b-used"};
  ASSERT_TRUE(
      scheduler.Schedule(PodBuilder("d/first").MigMode().Container(1, 4000).Build(), &only_b, 0)
          .scheduled());
  Decision d =
      scheduler.Schedule(PodBuilder("d/second").MigMode().Container(1, 4000).Build(), nullptr, 0);
  ASSERT_TRUE(d.scheduled()) << d.message;
  EXPECT_EQ(d.node, "b-used");
}

TEST_F(MigNodeScoringTest, SpreadPolicyStillSpreads) {
  AddNode("a-empty", 1);
  AddNode("b-used", 1);
  Scheduler scheduler(state_, PolicyDefaults{});
  std::vector<std::string> only_b = {"b-used"};
  ASSERT_TRUE(
      scheduler.Schedule(PodBuilder("d/first").MigMode().Container(1, 4000).Build(), &only_b, 0)
          .scheduled());
  Decision d = scheduler.Schedule(PodBuilder("d/second")
                                      .MigMode()
                                      .Annotation("hami.io/node-scheduler-policy", "spread")
                                      .Container(1, 4000)
                                      .Build(),
                                  nullptr, 0);
  ASSERT_TRUE(d.scheduled()) << d.message;
  EXPECT_EQ(d.node, "a-empty");
}

TEST_F(MigNodeScoringTest, InstancesOfOnePodSpreadOverGpusOnlyWhenThatKeepsMore) {
  AddNode("n", 2);
  PolicyDefaults defaults;
  defaults.mig_prior = *ParseMigPrior("1g=1,7g=1", 8);
  Scheduler scheduler(state_, defaults);
  // Two 1g instances: both on one GPU keeps the other GPU whole for a 7g.
  Decision d =
      scheduler.Schedule(PodBuilder("d/pair").MigMode().Container(2, 4000).Build(), nullptr, 0);
  ASSERT_TRUE(d.scheduled()) << d.message;
  ASSERT_EQ(d.containers[0].size(), 2U);
  EXPECT_EQ(d.containers[0][0].uuid, d.containers[0][1].uuid);
  // A whole GPU now goes to the untouched one.
  Decision whole =
      scheduler.Schedule(PodBuilder("d/whole").MigMode().Container(1, 40000).Build(), nullptr, 0);
  ASSERT_TRUE(whole.scheduled()) << whole.message;
  EXPECT_NE(whole.containers[0][0].uuid, d.containers[0][0].uuid);
}

// A stranded slice is lost until an instance beside it leaves. Node a-used's GPUs each hold a
// 4g.20gb (slices 0-3), so a 1g there strands slice 7 (only 3g@4 and 7g cover it). Where no pod
// has left, the 1g opens an empty GPU of b-empty rather than strand it. Once most pods placed
// have left (and the A100s are mostly free), the slice is lost only for a while: the 1g fills
// the used GPU and b-empty's GPUs stay whole (docs/placement.md, "Stranded slices and churn").
TEST_F(MigNodeScoringTest, AStrandedSliceCostsLessOncePodsLeave) {
  const auto place_1g_after = [](bool others_leave) -> std::string {
    state::ClusterState state{config::SchedulerConfig{}};
    for (const std::string name : {"a-used", "b-empty", "c-others"}) {
      state.UpsertNode(NodeWith(name, {A100Mig(name + "-GPU-0", 0), A100Mig(name + "-GPU-1", 1)}));
    }
    PolicyDefaults defaults;
    defaults.mig_prior = *ParseMigPrior("1g=1,3g=1", 8);
    Scheduler scheduler(state, defaults);
    const std::vector<std::string> a = {"a-used"};
    const std::vector<std::string> c = {"c-others"};
    for (const std::string gpu : {"0", "1"}) {
      // Half the compute and 19000 MiB: 4g.20gb, whose one placement is slices 0-3.
      const Decision four = scheduler.Schedule(
          PodBuilder("d/4g-" + gpu).MigMode().Container(1, 19000, 50).Build(), &a, 0);
      EXPECT_TRUE(four.scheduled()) << four.message;
      EXPECT_EQ(four.reservation.mig.size() == 1 ? four.reservation.mig[0].profile : "", "4g.20gb");
    }
    for (int i = 0; i < 6; ++i) {
      const std::string key = "d/other-" + std::to_string(i);
      const Decision other =
          scheduler.Schedule(PodBuilder(key).MigMode().Container(1, 4000).Build(), &c, 0);
      EXPECT_TRUE(other.scheduled()) << other.message;
      if (others_leave) state.RemovePod(key);
    }
    const std::vector<std::string> a_or_b = {"a-used", "b-empty"};
    const Decision d =
        scheduler.Schedule(PodBuilder("d/1g").MigMode().Container(1, 4000).Build(), &a_or_b, 0);
    EXPECT_TRUE(d.scheduled()) << d.message;
    return d.node;
  };
  EXPECT_EQ(place_1g_after(/*others_leave=*/false), "b-empty");
  EXPECT_EQ(place_1g_after(/*others_leave=*/true), "a-used");
}

// With larger profiles allowed the plan never keeps less placeability than the smallest-profile
// plan, and without, every instance gets the least memory that can be placed.
TEST(MigProfileChoiceTest, LargerProfilesNeverLoseAndSmallestIsTheDefault) {
  std::mt19937 rng(7);
  state::ClusterState cluster(config::SchedulerConfig{});
  cluster.UpsertNode(NodeWith("n", {A100Mig("GPU-0", 0), A100Mig("GPU-1", 1)}));
  const state::NodeState* node = cluster.node("n");
  MigDemandMix mix(1.0);
  MigPrior prior;
  MigWeights weights(mix, prior);
  int compared = 0;
  for (int trial = 0; trial < 300; ++trial) {
    // A random running pod.
    state::ClusterState work(config::SchedulerConfig{});
    work.UpsertNode(NodeWith("n", {A100Mig("GPU-0", 0), A100Mig("GPU-1", 1)}));
    state::PodReservation running{"d/running", "u", "n", 0, {{}}, {}};
    std::vector<mig::Layout> layouts(2);
    for (int k = 0; k < 5; ++k) {
      const int g = std::uniform_int_distribution<int>(0, 1)(rng);
      const auto& m = node->mig_models[g];
      const int p = std::uniform_int_distribution<int>(0, m.profiles().size() - 1)(rng);
      const auto& pls = m.profiles()[p].placements;
      const auto& pl = pls[std::uniform_int_distribution<int>(0, pls.size() - 1)(rng)];
      if (!m.CanPlace(layouts[g], p, pl)) continue;
      m.Place(layouts[g], p, pl);
      running.devices[0].push_back(
          codec::ContainerDevice{node->devices[g].uuid, "NVIDIA", m.profiles()[p].memory_mib, 0});
      running.mig.push_back(codec::MigAllocation{0, static_cast<int>(running.devices[0].size() - 1),
                                                 node->devices[g].uuid, m.profiles()[p].name, pl,
                                                 std::nullopt});
    }
    if (!running.mig.empty()) work.AddPod(running);
    const state::NodeState& ns = *work.node("n");
    PodRequest request;
    request.names = {"c"};
    request.slots = {ContainerRequest{std::uniform_int_distribution<int>(1, 2)(rng),
                                      std::uniform_int_distribution<int>(1000, 20000)(rng),
                                      kMemPercentUnset, 0}};
    PodPreferences prefs;
    prefs.vgpu_mode = VgpuMode::kMig;
    const MigGoal smallest{&weights, false};
    const MigGoal larger{&weights, true};
    auto a = PlanMigPlacement(ns, request, prefs, &smallest);
    auto b = PlanMigPlacement(ns, request, prefs, &larger);
    ASSERT_EQ(a.has_value(), b.has_value());
    if (!a) continue;
    ++compared;
    EXPECT_LE(b->placeability_drop, a->placeability_drop + 1e-9);
    EXPECT_LE(a->memory, b->memory);
  }
  EXPECT_GT(compared, 100);
}

}  // namespace
}  // namespace tessera::sched

namespace tessera::sched {
namespace {

// The shortcut for nodes of MIG GPUs only must answer as the walk over the devices does.
TEST(OnlyMigDevicesAdmittedTest, AllMigNodesAnswerAsTheDeviceWalk) {
  state::ClusterState cluster(config::SchedulerConfig{});
  cluster.UpsertNode(testing::NodeWith("mig", {testing::A100Mig("GPU-0", 0)}));
  cluster.UpsertNode(testing::NodeWith(
      "mixed", {testing::A100Mig("GPU-1", 0), testing::SharingGpu("GPU-2", 32768, 0, 1)}));
  const state::NodeState& mig = *cluster.node("mig");
  const state::NodeState& mixed = *cluster.node("mixed");
  ASSERT_TRUE(mig.all_mig);
  ASSERT_FALSE(mixed.all_mig);
  PodPreferences prefs;
  for (VgpuMode mode : {VgpuMode::kAny, VgpuMode::kMig, VgpuMode::kHamiCore, VgpuMode::kMps}) {
    prefs.vgpu_mode = mode;
    state::NodeState walked = mig;
    walked.all_mig = false;  // forces the walk
    EXPECT_EQ(OnlyMigDevicesAdmitted(mig, prefs), OnlyMigDevicesAdmitted(walked, prefs))
        << ToString(mode);
  }
  prefs.vgpu_mode = VgpuMode::kAny;
  EXPECT_TRUE(OnlyMigDevicesAdmitted(mig, prefs));
  EXPECT_FALSE(OnlyMigDevicesAdmitted(mixed, prefs));
  prefs.vgpu_mode = VgpuMode::kMig;
  EXPECT_TRUE(OnlyMigDevicesAdmitted(mixed, prefs));  // the shared GPU is not admitted
  prefs.vgpu_mode = VgpuMode::kHamiCore;
  EXPECT_FALSE(OnlyMigDevicesAdmitted(mig, prefs));
}

}  // namespace
}  // namespace tessera::sched
