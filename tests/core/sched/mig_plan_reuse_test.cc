// The MIG plan keeps working state from node to node within one decision (the arrangement
// cache, with the arrangements themselves, the search's buffers, and the plans of nodes with the
// same MIG GPUs) and reads each node's summaries (NodeState::gpu_summaries) instead of its GPUs'
// objects. Property: on random nodes of several GPU models and sizes, planned one after another
// with one decision's working state, every plan equals a plan made afresh for that node alone
// from its GPUs' objects, with and without its assignments.
#include <gtest/gtest.h>

#include <random>

#include "core/mig/catalog.h"
#include "core/mig/layout_table.h"
#include "core/sched/cycle_state.h"
#include "core/sched/mig_placement.h"
#include "support/builders.h"
#include "support/mig_fill.h"

namespace tessera::sched {
namespace {

void ExpectSameFigures(const std::optional<MigPlan>& reused, const std::optional<MigPlan>& fresh) {
  ASSERT_EQ(reused.has_value(), fresh.has_value());
  if (!fresh) return;
  EXPECT_EQ(reused->placeability_drop, fresh->placeability_drop);
  EXPECT_EQ(reused->memory, fresh->memory);
  EXPECT_EQ(reused->largest_gain, fresh->largest_gain);
  EXPECT_EQ(reused->gpus_used, fresh->gpus_used);
  EXPECT_EQ(reused->instances, fresh->instances);
  EXPECT_EQ(reused->cores, fresh->cores);
  EXPECT_EQ(reused->assigned_mem, fresh->assigned_mem);
  // The totals are what the assignments add up to.
  int32_t instances = 0;
  int64_t cores = 0;
  int64_t mem = 0;
  for (const auto& slot : fresh->slots) {
    for (const auto& a : slot) {
      instances += 1;
      cores += a.cores;
      mem += a.mem;
    }
  }
  EXPECT_EQ(fresh->instances, instances);
  EXPECT_EQ(fresh->cores, cores);
  EXPECT_EQ(fresh->assigned_mem, mem);
}

void ExpectSamePlan(const std::optional<MigPlan>& reused, const std::optional<MigPlan>& fresh) {
  ExpectSameFigures(reused, fresh);
  if (!fresh) return;
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
    // Some GPUs the plan may not use.
    for (auto& d : devices) d.healthy = rng() % 10 != 0;
    names.push_back("node-" + std::to_string(n));
    cluster.UpsertNode(testing::NodeWith(names.back(), devices));
    if (n % 4 != 0) {
      testing::FillMigRandomly(&cluster, names.back(), &rng);
      continue;
    }
    // Some nodes left empty, each with an empty twin: nodes with the same MIG GPUs recur (the
    // plan memo's hits) though they differ in names and UUIDs.
    for (auto& d : devices) d.uuid += "-twin";
    names.push_back(names.back() + "-twin");
    cluster.UpsertNode(testing::NodeWith(names.back(), devices));
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
    // The filter's own goal: GPUs chosen from the summaries, plans without assignments
    // remembered per node description.
    MigArrangeCache filter_cache;
    MigPlanBuffers filter_buffers;
    MigPlanMemo memo;
    MigGoal filter{&weights, false, &filter_cache, &filter_buffers, &memo};
    filter.admits_open_mig_gpus = AdmitsOpenMigGpus(parsed.prefs->value());
    ASSERT_TRUE(filter.admits_open_mig_gpus);
    int described = 0;
    for (const std::string& name : names) {
      SCOPED_TRACE(name);
      const state::NodeState& node = *cluster.node(name);
      MigArrangeCache own_cache;
      const MigGoal alone{&weights, false, &own_cache, nullptr};
      const PodRequest& request = parsed.request.value();
      const PodPreferences& prefs = parsed.prefs->value();
      const auto fresh = PlanMigPlacement(node, request, prefs, &alone);
      ExpectSamePlan(PlanMigPlacement(node, request, prefs, &shared), fresh);
      // From the summaries, with assignments (the chosen node's, CompleteBestFit) and without
      // (every other node: from the memo when a node like it was planned).
      ExpectSamePlan(PlanMigPlacement(node, request, prefs, &filter), fresh);
      const auto figures = PlanMigPlacement(node, request, prefs, &filter, false);
      ExpectSameFigures(figures, fresh);
      if (figures) {
        EXPECT_TRUE(figures->slots.empty());
      }
      described += memo.Describe(node) ? 1 : 0;
      (fresh ? planned : refused) += 1;
    }
    // Nodes alike in their MIG GPUs shared one search.
    EXPECT_LT(memo.size(), static_cast<size_t>(described));
  }
  // Both outcomes are exercised.
  EXPECT_GT(planned, 100);
  EXPECT_GT(refused, 100);
}

// The summaries ClusterState keeps are what a walk over the node's GPUs gives, after every kind
// of change: pods added and removed, a node re-registered, a GPU cordoned.
TEST(MigPlanReuseTest, NodeSummariesFollowTheUsage) {
  auto catalog = mig::GpuModelCatalog::Builtin();
  ASSERT_TRUE(catalog.ok());
  const mig::GpuModelSpec* a100 = catalog->Find("A100-40GB");
  ASSERT_NE(a100, nullptr);
  std::mt19937 rng(7);
  state::ClusterState cluster{config::SchedulerConfig{}};
  std::vector<model::GpuDevice> devices;
  for (uint32_t g = 0; g < 4; ++g) {
    devices.push_back(testing::MigDeviceOf(*a100, "GPU-s-" + std::to_string(g), g));
  }
  devices.push_back(testing::SharingGpu("GPU-s-4", 16000, 0, 4));
  model::Node node = testing::NodeWith("s", devices);
  cluster.UpsertNode(node);
  const auto check = [&](const std::string& when) {
    SCOPED_TRACE(when);
    const state::NodeState& ns = *cluster.node("s");
    ASSERT_TRUE(ns.summaries_current);
    ASSERT_EQ(ns.gpu_summaries.size(), ns.devices.size());
    state::NodeTotals walked;
    for (size_t g = 0; g < ns.devices.size(); ++g) {
      const auto& d = ns.devices[g];
      const auto& u = ns.usage[g];
      walked.slots += d.count;
      walked.cores += d.total_cores;
      walked.mem += d.total_mem_mib;
      walked.used += u.used;
      walked.used_cores += u.used_cores;
      walked.used_mem += u.used_mem;
      walked.idle = walked.idle && u.used == 0;
      const state::GpuSummary& s = ns.gpu_summaries[g];
      if (!d.IsMig()) {
        EXPECT_FALSE(s.open);
        EXPECT_EQ(s.rules, nullptr);
        continue;
      }
      EXPECT_EQ(s.rules, ns.mig_models[g].RulesIdentity());
      ASSERT_GE(s.layout_id, 0);
      EXPECT_EQ(ns.mig_models[g].table()->states()[static_cast<size_t>(s.layout_id)], u.layout);
      EXPECT_EQ(s.open, d.healthy && u.Trusted() && ns.cordoned.count(d.uuid) == 0);
    }
    EXPECT_EQ(ns.totals.slots, walked.slots);
    EXPECT_EQ(ns.totals.cores, walked.cores);
    EXPECT_EQ(ns.totals.mem, walked.mem);
    EXPECT_EQ(ns.totals.used, walked.used);
    EXPECT_EQ(ns.totals.used_cores, walked.used_cores);
    EXPECT_EQ(ns.totals.used_mem, walked.used_mem);
    EXPECT_EQ(ns.totals.idle, walked.idle);
  };
  check("registered");
  for (int round = 0; round < 3; ++round) {
    testing::FillMigRandomly(&cluster, "s", &rng);
    check("filled " + std::to_string(round));
  }
  node.annotations["hami.io/device-cordon"] = "GPU-s-1";
  cluster.UpsertNode(node);
  check("cordoned");
  (void)cluster.RemovePod("default/run-s");
  check("emptied");
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
  EXPECT_EQ(goal.stranded, weights.Stranded(model));
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
