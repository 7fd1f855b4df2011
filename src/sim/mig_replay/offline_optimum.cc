#include "sim/mig_replay/offline_optimum.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "sim/mig_replay/policy.h"

namespace tessera::sim::mig_replay {
namespace {

struct Gpu {
  int node = 0;
  int device = 0;
  const mig::GpuMigModel* model = nullptr;
  std::string type;  // GPUs with equal types are interchangeable
};

class OptimumSearch {
 public:
  OptimumSearch(const MigCluster& cluster, const std::vector<Arrival>& arrivals)
      : cluster_(cluster), arrivals_(arrivals) {
    for (int n = 0; n < cluster.node_count(); ++n) {
      const state::NodeState& node = *cluster.nodes()[n];
      for (size_t d = 0; d < node.devices.size(); ++d) {
        gpus_.push_back(Gpu{n, static_cast<int>(d), &node.mig_models[d], node.devices[d].type});
        layouts_.push_back(node.usage[d].layout);
      }
    }
  }

  int64_t Best(size_t i) {
    if (i == arrivals_.size()) return 0;
    const std::string key = Key(i);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    int64_t best = Best(i + 1);  // leave request i out
    const int type = arrivals_[i].type;
    for (size_t g = 0; g < gpus_.size(); ++g) {
      if (SameAsEarlierGpu(g)) continue;
      const Gpu& gpu = gpus_[g];
      const int intended = cluster_.Intended(gpu.node, gpu.device, type);
      if (intended < 0) continue;
      const int64_t served = gpu.model->profiles()[intended].placements.front().size;
      for (int profile : CoveringProfiles(*gpu.model, intended)) {
        for (const auto& placement : gpu.model->profiles()[profile].placements) {
          if (!gpu.model->CanPlace(layouts_[g], profile, placement)) continue;
          const mig::Layout saved = layouts_[g];
          gpu.model->Place(layouts_[g], profile, placement);
          best = std::max(best, served + Best(i + 1));
          layouts_[g] = saved;
        }
      }
    }
    memo_.emplace(key, best);
    return best;
  }

 private:
  bool SameAsEarlierGpu(size_t g) const {
    for (size_t h = 0; h < g; ++h) {
      if (gpus_[h].type == gpus_[g].type && layouts_[h] == layouts_[g]) return true;
    }
    return false;
  }

  // Request index and the layouts, those of interchangeable GPUs as a sorted multiset.
  std::string Key(size_t i) const {
    std::vector<std::string> parts;
    for (size_t g = 0; g < gpus_.size(); ++g) {
      std::string part = gpus_[g].type;
      const mig::Layout& l = layouts_[g];
      part.append(reinterpret_cast<const char*>(&l.occupied), sizeof(l.occupied));
      part.append(reinterpret_cast<const char*>(l.counts.data()), l.counts.size());
      part.push_back(static_cast<char>(l.media_shared));
      part.push_back(static_cast<char>(l.media_all));
      part.push_back(static_cast<char>(l.with_media));
      parts.push_back(std::move(part));
    }
    return OptimumMemoKey(i, std::move(parts));
  }

  const MigCluster& cluster_;
  const std::vector<Arrival>& arrivals_;
  std::vector<Gpu> gpus_;
  std::vector<mig::Layout> layouts_;
  std::unordered_map<std::string, int64_t> memo_;
};

}  // namespace

std::string OptimumMemoKey(size_t index, std::vector<std::string> gpu_parts) {
  std::sort(gpu_parts.begin(), gpu_parts.end());
  std::string key = std::to_string(index);
  for (const auto& p : gpu_parts) key += "|" + p;
  return key;
}

Result<int64_t> OfflineOptimumServedSlices(const MigCluster& cluster,
                                           const std::vector<Arrival>& arrivals) {
  for (const auto& a : arrivals) {
    if (cluster.workload().types[a.type].count != 1) {
      return Error{"offline optimum: request type " + cluster.workload().types[a.type].label +
                   " asks for several instances; only single-instance types are supported"};
    }
  }
  OptimumSearch search(cluster, arrivals);
  return search.Best(0);
}

}  // namespace tessera::sim::mig_replay
