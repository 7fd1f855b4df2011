// Property: on random MIG states and requests, for every built-in GPU model with complete
// placement data, the scheduler places a pod exactly when a brute-force search over every
// (GPU, profile, placement) assignment finds one; its placements never overlap and never exceed
// a profile's instance limit.
#include <gtest/gtest.h>

#include <random>

#include "core/codec/node_register.h"
#include "core/mig/catalog.h"
#include "core/sched/scheduler.h"
#include "support/builders.h"

namespace tessera::sched {
namespace {

struct Demand {
  int slot;
  mig::InstanceDemand demand;
};

// Exhaustive: every instance tries every GPU, eligible profile and placement.
bool BruteForce(const std::vector<mig::GpuMigModel>& models, std::vector<mig::Layout>& layouts,
                const std::vector<Demand>& demands, size_t i) {
  if (i == demands.size()) return true;
  for (size_t g = 0; g < models.size(); ++g) {
    const auto& profiles = models[g].profiles();
    for (size_t p = 0; p < profiles.size(); ++p) {
      if (profiles[p].memory_mib < demands[i].demand.mem_mib) continue;
      if (demands[i].demand.cores > 0 && profiles[p].core < demands[i].demand.cores) continue;
      for (const auto& pl : profiles[p].placements) {
        if (!models[g].CanPlace(layouts[g], static_cast<int>(p), pl)) continue;
        models[g].Place(layouts[g], static_cast<int>(p), pl);
        bool ok = BruteForce(models, layouts, demands, i + 1);
        models[g].Remove(layouts[g], static_cast<int>(p), pl);
        if (ok) return true;
      }
    }
  }
  return false;
}

class MigPropertyTest : public ::testing::TestWithParam<int> {};

TEST_P(MigPropertyTest, SchedulerAgreesWithBruteForce) {
  auto catalog = mig::GpuModelCatalog::Builtin();
  ASSERT_TRUE(catalog.ok());
  const int gpus_per_node = GetParam();
  std::mt19937 rng(20261130 + gpus_per_node);
  int checked_models = 0;
  for (const auto& spec : catalog->models()) {
    if (!spec.complete) continue;
    ++checked_models;
    SCOPED_TRACE(spec.model);
    int feasible = 0;
    int infeasible = 0;
    for (int trial = 0; trial < 60; ++trial) {
      SCOPED_TRACE("trial " + std::to_string(trial));
      std::vector<model::GpuDevice> devices;
      for (int g = 0; g < gpus_per_node; ++g) {
        devices.push_back(testing::MigDeviceOf(spec, "GPU-" + std::to_string(g), g));
      }
      config::SchedulerConfig config;
      state::ClusterState cluster(config);
      cluster.UpsertNode(testing::NodeWith("n", devices));
      const state::NodeState* node = cluster.node("n");
      ASSERT_NE(node, nullptr);
      // A random starting state: random legal instances held by one running pod.
      state::PodReservation running{"default/running", "u", "n", 0, {{}}, {}};
      std::vector<mig::Layout> layouts(devices.size());
      std::uniform_int_distribution<int> count_dist(0, 4);
      for (size_t g = 0; g < devices.size(); ++g) {
        const auto& model = node->mig_models[g];
        int want = count_dist(rng);
        for (int k = 0; k < want * 3 && want > 0; ++k) {
          int p = std::uniform_int_distribution<int>(0, model.profiles().size() - 1)(rng);
          const auto& pls = model.profiles()[p].placements;
          const auto& pl = pls[std::uniform_int_distribution<int>(0, pls.size() - 1)(rng)];
          if (!model.CanPlace(layouts[g], p, pl)) continue;
          model.Place(layouts[g], p, pl);
          running.devices[0].push_back(codec::ContainerDevice{
              devices[g].uuid, "NVIDIA", model.profiles()[p].memory_mib, model.profiles()[p].core});
          running.mig.push_back(
              codec::MigAllocation{0, static_cast<int>(running.devices[0].size() - 1),
                                   devices[g].uuid, model.profiles()[p].name, pl, std::nullopt});
          if (--want == 0) break;
        }
      }
      if (!running.mig.empty()) cluster.AddPod(running);
      for (size_t g = 0; g < devices.size(); ++g) {
        ASSERT_EQ(cluster.node("n")->usage[g].layout, layouts[g]);
      }
      // A random pod: one or two containers, one to three instances each.
      testing::PodBuilder builder("default/p");
      builder.MigMode();
      std::vector<Demand> demands;
      int containers = std::uniform_int_distribution<int>(1, 2)(rng);
      for (int c = 0; c < containers; ++c) {
        const auto& profiles = node->mig_models[0].profiles();
        const auto& base =
            profiles[std::uniform_int_distribution<int>(0, profiles.size() - 1)(rng)];
        int mem = std::max(1, base.memory_mib - std::uniform_int_distribution<int>(0, 500)(rng));
        int cores = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? base.core : -1;
        int nums = std::uniform_int_distribution<int>(1, gpus_per_node == 1 ? 3 : 2)(rng);
        builder.Container(nums, mem, cores);
        for (int k = 0; k < nums; ++k) demands.push_back({c, {mem, cores < 0 ? 0 : cores}});
      }
      model::Pod pod = builder.Build();
      std::vector<mig::Layout> oracle_layouts = layouts;
      bool oracle = BruteForce(node->mig_models, oracle_layouts, demands, 0);

      Scheduler scheduler(cluster, PolicyDefaults{});
      Decision d = scheduler.Evaluate(pod, nullptr, 0);
      ASSERT_EQ(d.scheduled(), oracle) << d.message;
      if (!d.scheduled()) {
        ++infeasible;
        continue;
      }
      ++feasible;
      // The decision is legal: every instance on a listed placement, eligible for its demand,
      // no overlap, limits respected (CanPlace checks all of it incrementally).
      std::vector<mig::Layout> check = layouts;
      size_t k = 0;
      for (size_t slot = 0; slot < d.containers.size(); ++slot) {
        for (const auto& g : d.containers[slot]) {
          int dev = node->DeviceIndex(g.uuid);
          ASSERT_GE(dev, 0);
          const auto& model = node->mig_models[dev];
          int p = model.ProfileIndex(g.mig_profile);
          ASSERT_GE(p, 0) << g.mig_profile;
          ASSERT_TRUE(model.CanPlace(check[dev], p, g.placement))
              << g.mig_profile << "@" << g.placement.start;
          model.Place(check[dev], p, g.placement);
          ASSERT_LT(k, demands.size());
          EXPECT_GE(model.profiles()[p].memory_mib, demands[k].demand.mem_mib);
          if (demands[k].demand.cores > 0) {
            EXPECT_GE(model.profiles()[p].core, demands[k].demand.cores);
          }
          ++k;
        }
      }
      EXPECT_EQ(k, demands.size());
    }
    // The random mix must exercise both outcomes, or the property says little.
    EXPECT_GT(feasible, 0);
    EXPECT_GT(infeasible, 0);
  }
  EXPECT_GE(checked_models, 10);
}

INSTANTIATE_TEST_SUITE_P(GpusPerNode, MigPropertyTest, ::testing::Values(1, 2));

}  // namespace
}  // namespace tessera::sched
