// The demand-aware MIG placement on one 8-GPU node (FitPodOnNode with the goal: the joint plan
// over all GPUs, PlanMigPlacement). Issue 3's goal: under 50 µs per node.
//
// Arguments:
//   model    0 A100-40GB, 1 H100-SXM5-80GB, 2 RTX PRO 6000 Blackwell (8 GPUs of it).
//   fill     0 empty; 1 half: every GPU holds a seeded random set of instances covering about
//            half its slices (every GPU different: no two are interchangeable);
//            2 nearly full: about 7/8 of the slices.
//   request  0 one 1g; 1 one 3g; 2 two 1g in one container; 3 a 1g and a 3g container.
// The node, the layout tables and the demand weights are built before the timed loop.

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "bench_cluster.h"
#include "core/mig/catalog.h"
#include "core/sched/fit.h"
#include "core/sched/mig_placement.h"
#include "core/state/cluster_state.h"

namespace tessera {
namespace {

const char* kModels[] = {"A100-40GB", "H100-SXM5-80GB", "RTX-PRO-6000-Blackwell-96GB"};

const mig::GpuModelSpec& Spec(int model) {
  static const mig::GpuModelCatalog catalog = [] {
    auto c = mig::GpuModelCatalog::Builtin();
    if (!c.ok()) std::abort();
    return std::move(c.value());
  }();
  const mig::GpuModelSpec* spec = catalog.Find(kModels[model]);
  if (spec == nullptr) std::abort();
  return *spec;
}

struct Setup {
  state::ClusterState state{config::SchedulerConfig{}};
  sched::MigDemandMix mix;
  sched::MigPrior prior;
  std::unique_ptr<sched::MigWeights> weights;
  sched::PodRequest request;
  sched::PodPreferences prefs;
};

void Build(Setup& s, int model, int fill, int request) {
  const mig::GpuModelSpec& spec = Spec(model);
  std::vector<model::GpuDevice> gpus;
  for (int i = 0; i < kGpusPerNode; ++i) {
    model::GpuDevice d;
    d.uuid = "GPU-" + std::to_string(i);
    d.index = static_cast<uint32_t>(i);
    d.type = "NVIDIA " + spec.model;
    d.total_mem_mib = spec.memory_mib;
    d.total_cores = 100;
    d.healthy = true;
    d.mode = "mig";
    d.mig_profiles = spec.profiles;
    for (const auto& p : spec.profiles) d.count = std::max(d.count, p.EffectiveMaxCount());
    gpus.push_back(std::move(d));
  }
  model::Node node;
  node.name = "n";
  node.annotations[std::string(model::annotations::kNodeRegister)] =
      codec::EncodeNodeRegister(gpus);
  s.state.UpsertNode(node);
  const state::NodeState& ns = *s.state.node("n");
  if (fill > 0) {
    std::mt19937 rng(42);
    state::PodReservation running{"b/running", "u", "n", 0, {{}}, {}};
    const uint32_t slices = ns.mig_models[0].memory_slices();
    const uint32_t target = fill == 1 ? slices / 2 : slices * 7 / 8;
    for (int g = 0; g < kGpusPerNode; ++g) {
      const auto& m = ns.mig_models[g];
      mig::Layout layout;
      for (int attempt = 0;
           attempt < 200 && std::popcount(layout.occupied) < static_cast<int>(target); ++attempt) {
        const int p = std::uniform_int_distribution<int>(0, m.profiles().size() - 1)(rng);
        const auto& pls = m.profiles()[p].placements;
        const auto& pl = pls[std::uniform_int_distribution<int>(0, pls.size() - 1)(rng)];
        if (std::popcount(layout.occupied | mig::PlacementMask(pl)) > static_cast<int>(target)) {
          continue;
        }
        if (!m.CanPlace(layout, p, pl)) continue;
        m.Place(layout, p, pl);
        running.devices[0].push_back(
            codec::ContainerDevice{gpus[g].uuid, "NVIDIA", m.profiles()[p].memory_mib, 0});
        running.mig.push_back(
            codec::MigAllocation{0, static_cast<int>(running.devices[0].size() - 1), gpus[g].uuid,
                                 m.profiles()[p].name, pl, std::nullopt});
      }
    }
    s.state.AddPod(running);
  }
  // A mix that has seen every size.
  const int32_t one_g = spec.profiles.front().memory_mib;
  const int32_t full = [&] {
    int32_t best = 0;
    for (const auto& p : spec.profiles) best = std::max(best, p.memory_mib);
    return best;
  }();
  for (int32_t pct : {10, 25, 50, 100}) s.mix.Observe(sched::MigDemandKey{0, pct, 0}, 3);
  s.weights = std::make_unique<sched::MigWeights>(s.mix, s.prior);
  const int32_t three_g = full / 2;
  s.request.names = {"a", "b"};
  switch (request) {
    case 0:
      s.request.slots = {{1, one_g, sched::kMemPercentUnset, 0}};
      break;
    case 1:
      s.request.slots = {{1, three_g, sched::kMemPercentUnset, 0}};
      break;
    case 2:
      s.request.slots = {{2, one_g, sched::kMemPercentUnset, 0}};
      break;
    default:
      s.request.slots = {{1, one_g, sched::kMemPercentUnset, 0},
                         {1, three_g, sched::kMemPercentUnset, 0}};
      break;
  }
  s.request.names.resize(s.request.slots.size());
  s.prefs.vgpu_mode = sched::VgpuMode::kMig;
}

void BM_MigPlanOneNode(benchmark::State& bs) {
  Setup s;
  Build(s, static_cast<int>(bs.range(0)), static_cast<int>(bs.range(1)),
        static_cast<int>(bs.range(2)));
  const state::NodeState& ns = *s.state.node("n");
  const sched::MigGoal goal{s.weights.get(), false};
  int fits = 0;
  for (auto _ : bs) {
    sched::NodeFit fit = sched::FitPodOnNode(ns, s.request, s.prefs, nullptr, &goal);
    fits += fit.fits ? 1 : 0;
    benchmark::DoNotOptimize(fit);
  }
  bs.counters["fits"] = fits > 0 ? 1 : 0;
  bs.SetLabel(std::string(kModels[bs.range(0)]));
}
BENCHMARK(BM_MigPlanOneNode)
    ->ArgsProduct({{0, 1, 2}, {0, 1, 2}, {0, 1, 2, 3}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera
