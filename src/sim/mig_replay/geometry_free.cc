#include "sim/mig_replay/geometry_free.h"

#include <limits>

namespace tessera::sim::mig_replay {

GeometryFreePlacer::GeometryFreePlacer(const MigCluster& cluster)
    : cluster_(cluster), types_(cluster.workload().types.size()) {
  for (int n = 0; n < cluster.node_count(); ++n) {
    const state::NodeState& node = *cluster.nodes()[n];
    node_gpus_.emplace_back();
    for (size_t d = 0; d < node.devices.size(); ++d) {
      const mig::GpuMigModel& gpu = node.mig_models[d];
      node_gpus_.back().push_back(static_cast<int>(pools_.size()));
      const int slices = static_cast<int>(gpu.memory_slices());
      pools_.push_back(Pool{slices, static_cast<int>(gpu.compute_slices()), slices, 0, 0});
      for (size_t t = 0; t < types_; ++t) {
        const int profile = cluster.Intended(n, static_cast<int>(d), static_cast<int>(t));
        need_.push_back(
            profile < 0 ? -1 : static_cast<int>(gpu.profiles()[profile].placements.front().size));
        compute_.push_back(profile < 0 ? 0 : static_cast<int>(gpu.profiles()[profile].slice_count));
      }
    }
  }
}

bool GeometryFreePlacer::Place(const std::string& key, int type) {
  const int count = cluster_.workload().types[type].count;
  // Per node: each instance on the fullest pool that takes it; the node whose chosen pools had
  // the fewest free slices wins (for one instance: the fullest fitting pool of the cluster).
  int best_free = std::numeric_limits<int>::max();
  std::vector<Held> best;
  for (size_t node = 0; node < node_gpus_.size(); ++node) {
    const std::vector<int>& gpus = node_gpus_[node];
    std::vector<int> free;
    std::vector<int> compute_free;
    for (int g : gpus) {
      free.push_back(pools_[g].free);
      compute_free.push_back(pools_[g].compute_capacity - pools_[g].compute_used);
    }
    std::vector<Held> picks;
    int free_total = 0;
    for (int i = 0; i < count; ++i) {
      int chosen = -1;
      for (size_t k = 0; k < gpus.size(); ++k) {
        const int need = Need(gpus[k], type);
        if (need < 0 || need > free[k] || Compute(gpus[k], type) > compute_free[k]) continue;
        if (chosen < 0 || free[k] < free[chosen]) chosen = static_cast<int>(k);
      }
      if (chosen < 0) {
        picks.clear();
        break;
      }
      const int g = gpus[chosen];
      free_total += free[chosen];
      free[chosen] -= Need(g, type);
      compute_free[chosen] -= Compute(g, type);
      picks.push_back(Held{g, Need(g, type), Compute(g, type),
                           cluster_.DemandOf(static_cast<int>(node), chosen, type)});
    }
    if (picks.empty()) continue;
    if (free_total < best_free) {
      best_free = free_total;
      best = std::move(picks);
    }
  }
  if (best.empty()) return false;
  for (const Held& h : best) {
    Pool& p = pools_[h.gpu];
    p.free -= h.slices;
    p.compute_used += h.compute;
    p.instances += 1;
  }
  held_[key] = std::move(best);
  return true;
}

void GeometryFreePlacer::Release(const std::string& key) {
  auto it = held_.find(key);
  if (it == held_.end()) return;
  for (const Held& h : it->second) {
    Pool& p = pools_[h.gpu];
    p.free += h.slices;
    p.compute_used -= h.compute;
    p.instances -= 1;
  }
  held_.erase(it);
}

Snapshot GeometryFreePlacer::Measure() const {
  const Workload& w = cluster_.workload();
  int64_t capacity = 0, compute_capacity = 0, used = 0, compute = 0, in_use = 0;
  double stranded = 0, fragmentation = 0;
  for (size_t g = 0; g < pools_.size(); ++g) {
    const Pool& p = pools_[g];
    capacity += p.capacity;
    compute_capacity += p.compute_capacity;
    used += p.capacity - p.free;
    compute += p.compute_used;
    in_use += p.instances > 0 ? 1 : 0;
    if (p.free == 0) continue;
    bool any_fits = false;
    for (size_t t = 0; t < types_; ++t) {
      const int need = Need(static_cast<int>(g), static_cast<int>(t));
      const bool fits =
          need >= 0 && need <= p.free &&
          Compute(static_cast<int>(g), static_cast<int>(t)) <= p.compute_capacity - p.compute_used;
      any_fits = any_fits || fits;
      if (!fits) fragmentation += w.probabilities[t] * p.free;
    }
    if (!any_fits) stranded += p.free;
  }
  Snapshot s;
  s.memory_slice_ratio = static_cast<double>(used) / static_cast<double>(capacity);
  s.compute_slice_ratio = static_cast<double>(compute) / static_cast<double>(compute_capacity);
  s.gpus_in_use_ratio = static_cast<double>(in_use) / static_cast<double>(pools_.size());
  s.stranded_ratio = stranded / static_cast<double>(capacity);
  s.fragmentation_ratio = fragmentation / static_cast<double>(capacity);
  return s;
}

int64_t GeometryFreePlacer::ServedSlices(const std::string& key, int /*type*/) const {
  // A pool takes exactly the intended profile's slices, so what it holds is what it serves.
  const auto it = held_.find(key);
  if (it == held_.end()) return 0;
  int64_t total = 0;
  for (const Held& h : it->second) total += h.demand;
  return total;
}

}  // namespace tessera::sim::mig_replay
