// The MIG plan keeps working state from node to node within one decision (the arrangement
// cache, with the arrangements themselves, and the search's buffers). Property: on random
// nodes of several GPU models and sizes, planned one after another with one decision's cache
// and buffers, every plan equals a plan made afresh for that node alone.
#include <gtest/gtest.h>

#include <random>

#include "core/mig/catalog.h"
#include "core/sched/cycle_state.h"
#include "core/sched/mig_placement.h"
#include "support/builders.h"

namespace tessera::sched {
namespace {

// Random legal instances on each GPU, held by one running pod per node.
void FillRandomly(state::ClusterState* cluster, const std::string& name, std::mt19937* rng) {
  const state::NodeState* node = cluster->node(name);
  state::PodReservation running{"default/run-" + name, "u-" + name, name, 0, {{}}, {}};
  for (size_t g = 0; g < node->devices.size(); ++g) {
    const auto& model = node->mig_models[g];
    mig::Layout layout;
    const int want = std::uniform_int_distribution<int>(0, 4)(*rng);
    for (int k = 0, placed = 0; k < want * 3 && placed < want; ++k) {
      const int p = std::uniform_int_distribution<int>(0, model.profiles().size() - 1)(*rng);
      const auto& pls = model.profiles()[p].placements;
      const auto& pl = pls[std::uniform_int_distribution<size_t>(0, pls.size() - 1)(*rng)];
      if (!model.CanPlace(layout, p, pl)) continue;
      model.Place(layout, p, pl);
      ++placed;
      running.devices[0].push_back(codec::ContainerDevice{node->devices[g].uuid, "NVIDIA",
                                                          model.profiles()[p].memory_mib,
                                                          model.profiles()[p].core});
      running.mig.push_back(codec::MigAllocation{0, static_cast<int>(running.devices[0].size() - 1),
                                                 node->devices[g].uuid, model.profiles()[p].name,
                                                 pl, std::nullopt});
    }
  }
  if (!running.mig.empty()) cluster->AddPod(running);
}

void ExpectSamePlan(const std::optional<MigPlan>& reused, const std::optional<MigPlan>& fresh) {
  ASSERT_EQ(reused.has_value(), fresh.has_value());
  if (!fresh) return;
  EXPECT_EQ(reused->placeability_drop, fresh->placeability_drop);
  EXPECT_EQ(reused->memory, fresh->memory);
  EXPECT_EQ(reused->largest_gain, fresh->largest_gain);
  EXPECT_EQ(reused->gpus_used, fresh->gpus_used);
  ASSERT_EQ(reused->slots.size(), fresh->slots.size());
  for (size_t s = 0; s < fresh->slots.size(); ++s) {
    ASSERT_EQ(reused->slots[s].size(), fresh->slots[s].size());
    for (size_t i = 0; i < fresh->slots[s].size(); ++i) {
      const DeviceAssignment& a = reused->slots[s][i];
      const DeviceAssignment& b = fresh->slots[s][i];
      EXPECT_EQ(a.device, b.device);
      EXPECT_EQ(a.mig_profile, b.mig_profile);
      EXPECT_EQ(a.mem, b.mem);
      EXPECT_EQ(a.cores, b.cores);
      EXPECT_EQ(a.placement.start, b.placement.start);
      EXPECT_EQ(a.placement.size, b.placement.size);
    }
  }
}

TEST(MigPlanReuseTest, PlansWithOneDecisionsCacheAndBuffersEqualFreshPlans) {
  auto catalog = mig::GpuModelCatalog::Builtin();
  ASSERT_TRUE(catalog.ok());
  std::vector<const mig::GpuModelSpec*> specs;
  for (const auto& spec : catalog->models()) {
    if (spec.complete) specs.push_back(&spec);
  }
  ASSERT_GE(specs.size(), 2U);
  std::mt19937 rng(20261202);
  state::ClusterState cluster{config::SchedulerConfig{}};
  std::vector<std::string> names;
  for (int n = 0; n < 60; ++n) {
    // Sizes up and down, so the buffers shrink and grow between nodes.
    const int gpus = std::uniform_int_distribution<int>(1, 8)(rng);
    const auto& spec = *specs[std::uniform_int_distribution<size_t>(0, specs.size() - 1)(rng)];
    std::vector<model::GpuDevice> devices;
    devices.reserve(static_cast<size_t>(gpus));
    for (int g = 0; g < gpus; ++g) {
      devices.push_back(testing::MigDeviceOf(
          spec, "GPU-" + std::to_string(n) + "-" + std::to_string(g), static_cast<uint32_t>(g)));
    }
    names.push_back("node-" + std::to_string(n));
    cluster.UpsertNode(testing::NodeWith(names.back(), devices));
    FillRandomly(&cluster, names.back(), &rng);
  }
  MigDemandMix mix(1.0);
  mix.Observe(MigDemandKey{4000, 0, 0}, 3);
  mix.Observe(MigDemandKey{19000, 0, 0}, 1);
  const PolicyDefaults defaults;
  const MigWeights weights(mix, defaults.mig_prior);
  int planned = 0;
  int refused = 0;
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    testing::PodBuilder builder("default/p" + std::to_string(trial));
    builder.MigMode();
    const int containers = std::uniform_int_distribution<int>(1, 2)(rng);
    for (int c = 0; c < containers; ++c) {
      const int mem = std::vector<int>{3000, 4900, 9000, 19000, 39000}[rng() % 5];
      builder.Container(std::uniform_int_distribution<int>(1, 3)(rng), mem, -1);
    }
    const ParsedPod parsed = ParsePod(builder.Build(), config::NvidiaConfig{}, defaults);
    ASSERT_TRUE(parsed.request.ok());
    ASSERT_TRUE(parsed.prefs && parsed.prefs->ok());
    // One decision: one cache and one set of buffers for every node, as the filter uses them.
    MigArrangeCache cache;
    MigPlanBuffers buffers;
    const MigGoal shared{&weights, false, &cache, &buffers};
    for (const std::string& name : names) {
      SCOPED_TRACE(name);
      const state::NodeState& node = *cluster.node(name);
      MigArrangeCache own_cache;
      const MigGoal alone{&weights, false, &own_cache, nullptr};
      const auto reused =
          PlanMigPlacement(node, parsed.request.value(), parsed.prefs->value(), &shared);
      const auto fresh =
          PlanMigPlacement(node, parsed.request.value(), parsed.prefs->value(), &alone);
      ExpectSamePlan(reused, fresh);
      (fresh ? planned : refused) += 1;
    }
  }
  // Both outcomes are exercised.
  EXPECT_GT(planned, 100);
  EXPECT_GT(refused, 100);
}

TEST(MigPlanReuseTest, TheCacheKeepsTheArrangementArrangeChooses) {
  const model::GpuDevice device = testing::A100Mig("GPU-a");
  const mig::GpuMigModel model(device, nullptr);
  MigDemandMix mix(1.0);
  mix.Observe(MigDemandKey{4000, 0, 0}, 2);
  const MigPrior prior;  // MigWeights keeps a reference to it
  const MigWeights weights(mix, prior);
  MigArrangeCache cache;
  const mig::ArrangeGoal& goal = cache.GoalFor(model, weights, false);
  EXPECT_EQ(goal.profile_weights, &weights.For(model));
  EXPECT_EQ(goal.stranded_slice_value, weights.StrandedSliceValue(model));
  EXPECT_EQ(&cache.GoalFor(model, weights, false), &goal);  // looked up once
  mig::Layout layout;
  model.Place(layout, model.ProfileIndex("1g.5gb"), model.profiles()[0].placements.back());
  // Up to kMaxKeyDemands instances (kept in the entry) and beyond (arranged every time).
  for (size_t n = 1; n <= MigArrangeCache::kMaxKeyDemands + 2; ++n) {
    SCOPED_TRACE(n);
    const std::vector<mig::InstanceDemand> demands(n, mig::InstanceDemand{4000, 0});
    const auto expected = model.Arrange(layout, demands, goal);
    const MigArrangeCache::Entry& entry = cache.Get(model, layout, demands, goal);
    ASSERT_EQ(entry.fits, expected.has_value());
    if (!expected) continue;
    for (size_t j = 0; j < n; ++j) {
      EXPECT_EQ(entry.Choice(j).profile, (*expected)[j].profile);
      EXPECT_EQ(entry.Choice(j).placement.start, (*expected)[j].placement.start);
      EXPECT_EQ(entry.Choice(j).placement.size, (*expected)[j].placement.size);
    }
  }
}

}  // namespace
}  // namespace tessera::sched
