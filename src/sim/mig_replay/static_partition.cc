// Static partitioning: every GPU is cut once, before any request, and a request can only take a
// free pre-created instance. This is what clusters without dynamic MIG run (mig-parted configs
// such as all-1g, peers.md "nos"/mig-parted rows).

#include <algorithm>
#include <limits>

#include "sim/mig_replay/baselines.h"

namespace tessera::sim::mig_replay {
namespace {

// The allowed profile with `slices` compute slices and the least memory; -1 when none.
int ProfileWithSlices(const mig::GpuMigModel& gpu, uint32_t slices) {
  int best = -1;
  for (int p = 0; p < static_cast<int>(gpu.profiles().size()); ++p) {
    if (!gpu.Allowed(p) || gpu.profiles()[p].slice_count != slices) continue;
    if (best < 0 || gpu.profiles()[p].memory_mib < gpu.profiles()[best].memory_mib) best = p;
  }
  return best;
}

class StaticPolicy : public MigPolicy {
 public:
  StaticPolicy(const MigCluster& cluster, bool balanced) : balanced_(balanced) {
    for (const state::NodeState* node : cluster.nodes()) {
      slots_.emplace_back();
      for (size_t dev = 0; dev < node->mig_models.size(); ++dev) {
        std::vector<InstancePick> slots = StaticSlots(node->mig_models[dev], balanced);
        for (auto& slot : slots) slot.device = static_cast<int>(dev);
        slots_.back().push_back(std::move(slots));
      }
    }
  }
  std::string_view Name() const override {
    return balanced_ ? kPolicyStaticBalanced : kPolicyStatic1g;
  }

  // The node whose chosen slots are smallest in total (smallest covering slot per instance, then
  // the first GPU and slot), ties to the first node.
  Result<replay::PlaceOutcome> Place(MigCluster& cluster, const int& type, const std::string& key,
                                     std::mt19937_64& /*rng*/) override {
    int best = -1;
    uint32_t best_size = std::numeric_limits<uint32_t>::max();
    std::vector<InstancePick> best_picks;
    for (int n = 0; n < cluster.node_count(); ++n) {
      const state::NodeState& node = *cluster.nodes()[n];
      std::vector<mig::Layout> layouts;
      for (const auto& u : node.usage) layouts.push_back(u.layout);
      std::vector<InstancePick> picks;
      uint32_t size = 0;
      for (int i = 0; i < cluster.workload().types[type].count; ++i) {
        const InstancePick* chosen = nullptr;
        for (int dev = 0; dev < static_cast<int>(node.devices.size()); ++dev) {
          const int intended = cluster.Intended(n, dev, type);
          if (intended < 0) continue;
          const mig::GpuMigModel& gpu = node.mig_models[dev];
          const model::MigProfile& want = gpu.profiles()[intended];
          for (const InstancePick& slot : slots_[n][dev]) {
            const model::MigProfile& have = gpu.profiles()[slot.profile];
            if (have.slice_count < want.slice_count || have.memory_mib < want.memory_mib) continue;
            if (!gpu.CanPlace(layouts[dev], slot.profile, slot.placement)) continue;
            if (chosen == nullptr ||
                have.slice_count <
                    node.mig_models[chosen->device].profiles()[chosen->profile].slice_count) {
              chosen = &slot;
            }
          }
        }
        if (chosen == nullptr) {
          picks.clear();
          break;
        }
        const mig::GpuMigModel& gpu = node.mig_models[chosen->device];
        gpu.Place(layouts[chosen->device], chosen->profile, chosen->placement);
        picks.push_back(*chosen);
        size += gpu.profiles()[chosen->profile].slice_count;
      }
      if (picks.empty()) continue;
      if (best < 0 || size < best_size) {
        best = n;
        best_size = size;
        best_picks = std::move(picks);
      }
    }
    if (best < 0) return replay::PlaceOutcome::kRefused;
    cluster.Commit(key, best, best_picks);
    return replay::PlaceOutcome::kPlaced;
  }

 private:
  bool balanced_;
  std::vector<std::vector<std::vector<InstancePick>>> slots_;  // [node][gpu] -> instances
};

}  // namespace

std::vector<InstancePick> StaticSlots(const mig::GpuMigModel& gpu, bool balanced) {
  // all-1g: as many 1g as fit. Balanced: one instance of each common size, filling the GPU:
  // 3g+2g+1g+1g on 7-slice models (the mig-parted "balanced" idea), 2g+1g+1g on 4-slice ones.
  // The largest goes to its highest start, the rest to their lowest, so nothing overlaps.
  std::vector<uint32_t> sizes(gpu.compute_slices(), 1);  // all 1g (also balanced below 4 slices)
  if (balanced && gpu.compute_slices() >= 7) {
    sizes = {3, 2, 1, 1};
  } else if (balanced && gpu.compute_slices() >= 4) {
    sizes = {2, 1, 1};
  }
  std::vector<InstancePick> slots;
  mig::Layout layout;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int profile = ProfileWithSlices(gpu, sizes[i]);
    if (profile < 0) continue;
    std::vector<model::Placement> order = gpu.profiles()[profile].placements;
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.start < b.start; });
    if (balanced && i == 0) std::reverse(order.begin(), order.end());
    for (const auto& placement : order) {
      if (!gpu.CanPlace(layout, profile, placement)) continue;
      gpu.Place(layout, profile, placement);
      slots.push_back(InstancePick{-1, profile, placement});
      break;
    }
  }
  return slots;  // device -1: the caller knows which GPU these are for
}

std::unique_ptr<MigPolicy> MakeStaticPolicy(const MigCluster& cluster, bool balanced) {
  return std::make_unique<StaticPolicy>(cluster, balanced);
}

}  // namespace tessera::sim::mig_replay
