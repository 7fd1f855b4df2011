#include "sim/mig_replay/steady_optimum.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "sim/mig_replay/offline_optimum.h"
#include "sim/mig_replay/policy.h"

namespace tessera::sim::mig_replay {
namespace {

struct Resident {
  int arrival = 0;
  int profile = 0;
  model::Placement placement;
  int64_t served = 0;  // intended slices on its GPU
};

struct Gpu {
  int node = 0;
  int device = 0;
  const mig::GpuMigModel* model = nullptr;
  std::string type;  // GPUs with equal types are interchangeable
  mig::Layout layout;
  std::vector<Resident> resident;
};

class SteadySearch {
 public:
  SteadySearch(const MigCluster& cluster, const std::vector<Arrival>& arrivals, size_t warmup,
               SteadyAdmission admission)
      : cluster_(cluster), arrivals_(arrivals), warmup_(warmup), admission_(admission) {
    for (int n = 0; n < cluster.node_count(); ++n) {
      const state::NodeState& node = *cluster.nodes()[n];
      for (size_t d = 0; d < node.devices.size(); ++d) {
        gpus_.push_back(Gpu{n,
                            static_cast<int>(d),
                            &node.mig_models[d],
                            node.devices[d].type,
                            node.usage[d].layout,
                            {}});
      }
    }
  }

  // The best sum from arrival i on, the state being the GPUs before its departures.
  int64_t Best(size_t i) {
    if (i == arrivals_.size()) return 0;
    const std::vector<Gpu> saved = gpus_;
    const double now = arrivals_[i].time;
    int64_t held = 0;
    for (Gpu& gpu : gpus_) {
      std::erase_if(gpu.resident, [&](const Resident& r) {
        const Arrival& a = arrivals_[static_cast<size_t>(r.arrival)];
        if (a.time + a.lifetime > now) return false;
        gpu.model->Remove(gpu.layout, r.profile, r.placement);
        return true;
      });
      for (const Resident& r : gpu.resident) held += r.served;
    }
    const std::string key = Key(i);
    int64_t best = 0;
    if (auto it = memo_.find(key); it != memo_.end()) {
      best = it->second;
    } else {
      best = 0;
      bool fits = false;
      const int type = arrivals_[i].type;
      for (size_t g = 0; g < gpus_.size(); ++g) {
        if (SameAsEarlierGpu(g)) continue;
        Gpu& gpu = gpus_[g];
        const int intended = cluster_.Intended(gpu.node, gpu.device, type);
        if (intended < 0) continue;
        const int64_t served = gpu.model->profiles()[intended].placements.front().size;
        for (const int profile : CoveringProfiles(*gpu.model, intended)) {
          for (const auto& placement : gpu.model->profiles()[profile].placements) {
            if (!gpu.model->CanPlace(gpu.layout, profile, placement)) continue;
            fits = true;
            gpu.model->Place(gpu.layout, profile, placement);
            gpu.resident.push_back(Resident{static_cast<int>(i), profile, placement, served});
            best = std::max(best, Best(i + 1));
            gpu.resident.pop_back();
            gpu.model->Remove(gpu.layout, profile, placement);
          }
        }
      }
      // Turned away: always allowed for kAny, only where nothing fits for kBindEveryFit (a GPU
      // skipped as the same as an earlier one has that one's placements, so `fits` is whole).
      if (admission_ == SteadyAdmission::kAny || !fits) best = std::max(best, Best(i + 1));
      memo_.emplace(key, best);
    }
    gpus_ = saved;
    return (i >= warmup_ ? held : 0) + best;
  }

 private:
  bool SameAsEarlierGpu(size_t g) const {
    for (size_t h = 0; h < g; ++h) {
      if (gpus_[h].type == gpus_[g].type && Part(h) == Part(g)) return true;
    }
    return false;
  }

  // A GPU's type and its resident instances (arrival, profile, start), which fix its layout and
  // its departures.
  std::string Part(size_t g) const {
    std::vector<std::tuple<int, int, int>> r;
    for (const Resident& x : gpus_[g].resident) {
      r.emplace_back(x.arrival, x.profile, static_cast<int>(x.placement.start));
    }
    std::sort(r.begin(), r.end());
    std::string out = gpus_[g].type;
    for (const auto& [a, p, s] : r) {
      out += ";" + std::to_string(a) + "," + std::to_string(p) + "," + std::to_string(s);
    }
    return out;
  }

  // Arrival index and the GPUs' parts, those of interchangeable GPUs as a sorted multiset.
  std::string Key(size_t i) const {
    std::vector<std::string> parts;
    parts.reserve(gpus_.size());
    for (size_t g = 0; g < gpus_.size(); ++g) parts.push_back(Part(g));
    return OptimumMemoKey(i, std::move(parts));
  }

  const MigCluster& cluster_;
  const std::vector<Arrival>& arrivals_;
  size_t warmup_ = 0;
  SteadyAdmission admission_ = SteadyAdmission::kAny;
  std::vector<Gpu> gpus_;
  std::map<std::string, int64_t> memo_;
};

}  // namespace

Result<int64_t> SteadyOptimumServedSum(const MigCluster& cluster,
                                       const std::vector<Arrival>& arrivals, size_t warmup,
                                       SteadyAdmission admission) {
  for (const auto& a : arrivals) {
    if (cluster.workload().types[a.type].count != 1) {
      return Error{"steady optimum: request type " + cluster.workload().types[a.type].label +
                   " asks for several instances; only single-instance types are supported"};
    }
  }
  SteadySearch search(cluster, arrivals, warmup, admission);
  return search.Best(0);
}

}  // namespace tessera::sim::mig_replay
