#include "sim/mig_replay/metrics.h"

#include <bit>

namespace tessera::sim::mig_replay {

SnapshotProbe::SnapshotProbe(const MigCluster& cluster) : cluster_(cluster) {
  const Workload& w = cluster.workload();
  for (int n = 0; n < cluster.node_count(); ++n) {
    for (size_t d = 0; d < cluster.nodes()[n]->devices.size(); ++d) {
      std::vector<std::pair<int, double>> by_profile;
      for (size_t t = 0; t < w.types.size(); ++t) {
        const int profile = cluster.Intended(n, static_cast<int>(d), static_cast<int>(t));
        bool merged = false;
        for (auto& [p, prob] : by_profile) {
          if (p == profile) {
            prob += w.probabilities[t];
            merged = true;
          }
        }
        if (!merged) by_profile.emplace_back(profile, w.probabilities[t]);
      }
      demand_.push_back(std::move(by_profile));
    }
  }
}

Snapshot SnapshotProbe::Measure() const {
  int64_t occupied = 0, compute = 0, in_use = 0;
  double stranded = 0, fragmentation = 0;
  size_t gpu = 0;
  for (const state::NodeState* node : cluster_.nodes()) {
    for (size_t d = 0; d < node->devices.size(); ++d, ++gpu) {
      const mig::GpuMigModel& model = node->mig_models[d];
      const mig::Layout& layout = node->usage[d].layout;
      occupied += std::popcount(layout.occupied);
      compute += layout.compute_used;
      in_use += layout.occupied != 0 ? 1 : 0;
      const int free = FreeSlices(model, layout);
      if (free == 0) continue;
      bool any_fits = false;
      for (const auto& [profile, probability] : demand_[gpu]) {
        const bool fits = profile >= 0 && AnyPlacement(model, layout, profile);
        any_fits = any_fits || fits;
        if (!fits) fragmentation += probability * free;
      }
      if (!any_fits) stranded += free;
    }
  }
  const double slices = static_cast<double>(cluster_.total_memory_slices());
  Snapshot s;
  s.memory_slice_ratio = static_cast<double>(occupied) / slices;
  s.compute_slice_ratio =
      static_cast<double>(compute) / static_cast<double>(cluster_.total_compute_slices());
  s.gpus_in_use_ratio = static_cast<double>(in_use) / cluster_.gpu_count();
  s.stranded_ratio = stranded / slices;
  s.fragmentation_ratio = fragmentation / slices;
  return s;
}

}  // namespace tessera::sim::mig_replay
