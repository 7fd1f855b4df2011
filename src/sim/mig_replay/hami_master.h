#pragma once

// HAMi master after PR #2855 (Project-HAMi/HAMi#2831, merged 2026-08-27,
// pkg/device/nvidia/mig_topology.go, "score MIG placements and add backtracking fallback"),
// modelled from the PR's description and excerpt (its code is not in our HAMi snapshot): the MIG
// slices one container asks on one card are planned jointly, the request with the fewest free
// legal placements first, each candidate ranked by the largest free run it leaves, then the
// legal placements left, and a depth-first search backtracks under a step budget shared across
// the recursion (a valid layout can be rejected when the budget runs out).

#include <memory>
#include <optional>
#include <vector>

#include "core/mig/layout.h"
#include "sim/mig_replay/cluster.h"
#include "sim/mig_replay/policy.h"

namespace tessera::sim::mig_replay {

// Candidates the search may try per joint plan. PR #2855's constant is not in our snapshot: this
// value is our model's (ample for the 1-7 slices one card holds; tests pass smaller ones).
inline constexpr int kHamiMasterSearchBudget = 64;

struct HamiJointPlanResult {
  // Profile and placement per request, in request order (device -1); nullopt when none found.
  std::optional<std::vector<InstancePick>> picks;
  int steps = 0;                  // candidates tried (budget spent)
  bool budget_exhausted = false;  // the search stopped because the budget reached 0
};

// The profile a request of `intended` takes on `layout`: the first covering profile (HAMi's
// order, CoveringProfiles) with a free legal placement; -1 when none has one.
int HamiMasterProfile(const mig::GpuMigModel& gpu, const mig::Layout& layout, int intended);

// The legal placements of `profile` on `layout`, best first: largest free run left, then most
// legal placements left over every allowed profile, then lowest start (for one request the first
// is LargestFreeRunCandidate's choice).
std::vector<model::Placement> HamiMasterRank(const mig::GpuMigModel& gpu, const mig::Layout& layout,
                                             int profile);

// Plans every request (an intended profile each) jointly on one card whose occupancy before the
// pod is `before_pod`, as PR #2855's search does with a shared `budget` of candidate steps.
HamiJointPlanResult HamiJointPlan(const mig::GpuMigModel& gpu, const mig::Layout& before_pod,
                                  const std::vector<int>& intended_profiles,
                                  int budget = kHamiMasterSearchBudget);

// The hami-master policy: HAMi 2.10's node score and spread GPU order; each further instance of
// the pod revisits the GPUs in that order (HAMi PR #2724) and is planned jointly with the
// instances already chosen on the card.
std::unique_ptr<MigPolicy> MakeHamiMasterPolicy(int budget = kHamiMasterSearchBudget);

}  // namespace tessera::sim::mig_replay
