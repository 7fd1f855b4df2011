// The per-GPU rules of the baselines (docs/mig-replay.md, "Policies"), each cited from
// shared/spec/peers.md and hami-protocol.md.

#include <algorithm>

#include "core/sched/device_order.h"
#include "core/sched/fit.h"
#include "sim/mig_replay/policy.h"

namespace tessera::sim::mig_replay {
std::vector<int> CoveringProfiles(const mig::GpuMigModel& gpu, int intended) {
  const model::MigProfile& want = gpu.profiles()[intended];
  std::vector<int> out;
  for (int p = 0; p < static_cast<int>(gpu.profiles().size()); ++p) {
    const model::MigProfile& profile = gpu.profiles()[p];
    if (!gpu.Allowed(p)) continue;
    if (profile.memory_mib < want.memory_mib || profile.slice_count < want.slice_count) continue;
    out.push_back(p);
  }
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
    const model::MigProfile& pa = gpu.profiles()[a];
    const model::MigProfile& pb = gpu.profiles()[b];
    return std::pair(pa.memory_mib, pa.slice_count) < std::pair(pb.memory_mib, pb.slice_count);
  });
  return out;
}

std::optional<model::Placement> HamiPlacement(const mig::GpuMigModel& gpu,
                                              const mig::Layout& layout, int profile) {
  const model::MigProfile& p = gpu.profiles()[profile];
  std::vector<model::Placement> order = p.placements;
  // mig_topology.go orderedMigPlacements: 1g.* and 3g.* from the highest start, others from
  // the lowest (hami-protocol.md 6, "selectMigPlacement").
  const bool from_top = p.name.rfind("1g.", 0) == 0 || p.name.rfind("3g.", 0) == 0;
  std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    return from_top ? a.start > b.start : a.start < b.start;
  });
  for (const auto& placement : order) {
    if (gpu.CanPlace(layout, profile, placement)) return placement;
  }
  return std::nullopt;
}

std::optional<InstancePick> HamiCandidate(const mig::GpuMigModel& gpu, const mig::Layout& layout,
                                          int intended) {
  for (int profile : CoveringProfiles(gpu, intended)) {
    if (auto placement = HamiPlacement(gpu, layout, profile)) {
      return InstancePick{-1, profile, *placement};
    }
  }
  return std::nullopt;
}

int LegalPlacementsLeft(const mig::GpuMigModel& gpu, const mig::Layout& layout) {
  int n = 0;
  for (int p = 0; p < static_cast<int>(gpu.profiles().size()); ++p) {
    if (!gpu.Allowed(p)) continue;
    for (const auto& placement : gpu.profiles()[p].placements) {
      n += gpu.CanPlace(layout, p, placement) ? 1 : 0;
    }
  }
  return n;
}

std::optional<InstancePick> LargestFreeRunCandidate(const mig::GpuMigModel& gpu,
                                                    const mig::Layout& layout, int intended,
                                                    uint32_t blocked) {
  for (int profile : CoveringProfiles(gpu, intended)) {
    std::optional<InstancePick> best;
    uint32_t best_run = 0;
    int best_left = -1;
    // Placements in listed (ascending start) order: on equal scores the lowest start stays.
    for (const auto& placement : gpu.profiles()[profile].placements) {
      if ((mig::PlacementMask(placement) & blocked) != 0 ||
          !gpu.CanPlace(layout, profile, placement)) {
        continue;
      }
      mig::Layout after = layout;
      gpu.Place(after, profile, placement);
      const uint32_t run = gpu.LargestFreeRun(after);
      const int left = LegalPlacementsLeft(gpu, after);
      if (!best || run > best_run || (run == best_run && left > best_left)) {
        best = InstancePick{-1, profile, placement};
        best_run = run;
        best_left = left;
      }
    }
    if (best) return best;
  }
  return std::nullopt;
}

std::optional<InstancePick> AtSpan(const mig::GpuMigModel& gpu, const mig::Layout& layout,
                                   int profile, uint32_t span) {
  for (const model::Placement& placement : gpu.profiles()[profile].placements) {
    if (mig::PlacementMask(placement) == span && gpu.CanPlace(layout, profile, placement)) {
      return InstancePick{-1, profile, placement};
    }
  }
  return std::nullopt;
}

std::optional<model::Placement> LowestStart(const mig::GpuMigModel& gpu, const mig::Layout& layout,
                                            int profile) {
  std::optional<model::Placement> best;
  for (const auto& placement : gpu.profiles()[profile].placements) {
    if (!gpu.CanPlace(layout, profile, placement)) continue;
    if (!best || placement.start < best->start) best = placement;
  }
  return best;
}

float HamiNodeScore(const state::NodeState& node) {
  // HAMi's node score (hami-protocol.md 7.1) is the scheduler's NodeScore with nothing added.
  return sched::NodeScore(node, {});
}

std::vector<int> HamiDeviceOrder(const state::NodeState& node, bool binpack) {
  // The scheduler's own copy of HAMi's order (hami-protocol.md 7.2-7.3), for one instance.
  sched::PodPreferences prefs;
  prefs.gpu_policy.tokens = {binpack ? "binpack" : "spread"};
  return sched::HamiVisitOrder(node, sched::ContainerRequest{.nums = 1}, prefs);
}

}  // namespace tessera::sim::mig_replay
