#pragma once

// Placement policies of the MIG benchmark (docs/mig-replay.md, "Policies"). Every policy places
// into the same MigCluster: tessera through its production scheduler, the baselines by reading
// NodeState layouts and committing a PodReservation.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/sched/node_policy.h"
#include "sim/mig_replay/cluster.h"
#include "sim/replay/placement_policy.h"

namespace tessera::sim::mig_replay {

inline constexpr std::string_view kPolicyTessera = "tessera";
// Not in the default set: tessera with --gpu-scheduler-policy=binpack, for comparison.
inline constexpr std::string_view kPolicyTesseraGpuBinpack = "tessera-gpu-binpack";
inline constexpr std::string_view kPolicyHami210 = "hami-2.10";
// HAMi master after PR #2855: joint, backtracking planning of a pod's instances on one card.
inline constexpr std::string_view kPolicyHamiMaster = "hami-master";
inline constexpr std::string_view kPolicyLargestFreeRun = "largest-free-run";
inline constexpr std::string_view kPolicyFirstFit = "first-fit";
inline constexpr std::string_view kPolicyBestFit = "best-fit";
inline constexpr std::string_view kPolicyStatic1g = "static-1g";
inline constexpr std::string_view kPolicyStaticBalanced = "static-balanced";

// A policy of the MIG benchmark: the one interface of both replays (replay::PlacementPolicy),
// here placing a request of the workload's type index into a MigCluster. No MIG policy draws
// from the stream.
using MigPolicy = replay::PlacementPolicy<MigCluster, int>;

// The default policies, in report order.
const std::vector<std::string>& AllPolicyNames();
// The default policies and the optional variants (what --policy accepts).
const std::vector<std::string>& KnownPolicyNames();
// One policy instance for one run on `cluster` (tessera's scheduler holds the cluster's state).
// "tessera:NAME" is tessera under the operator's node policy NAME of `node_policies`.
Result<std::unique_ptr<MigPolicy>> MakeMigPolicy(
    std::string_view name, MigCluster& cluster,
    std::span<const sched::NodePolicy> node_policies = {});

// The baselines' building blocks, exposed for tests.

// A node's choice for all instances of a pod, or nullopt.
using NodePicks = std::optional<std::vector<InstancePick>>;

// Allowed profiles at least as large as `intended` in memory and compute slices, sorted as
// HAMi's selectMigCandidate sorts profiles: memory, then compute slices (stable).
std::vector<int> CoveringProfiles(const mig::GpuMigModel& gpu, int intended);

// HAMi 2.10 selectMigPlacement on one GPU: the placements of `profile` sorted by start,
// descending for 1g.* and 3g.* profiles and ascending otherwise; the first legal one.
std::optional<model::Placement> HamiPlacement(const mig::GpuMigModel& gpu,
                                              const mig::Layout& layout, int profile);
// HAMi 2.10 selectMigCandidate restricted to profiles that cover the intended one (memory and
// compute slices), smallest (memory, then compute slices) first.
std::optional<InstancePick> HamiCandidate(const mig::GpuMigModel& gpu, const mig::Layout& layout,
                                          int intended);
// HAMi PR #2855: the first covering profile that fits; its placement that leaves the largest
// free run, then the most legal placements of every profile, then the lowest start. Placements
// on a memory slice of `blocked` are not considered (HAMi blocks none; the offline placers leave
// room another pod is known to need).
std::optional<InstancePick> LargestFreeRunCandidate(const mig::GpuMigModel& gpu,
                                                    const mig::Layout& layout, int intended,
                                                    uint32_t blocked = 0);
// The placement of exactly `profile` whose memory-slice mask is `span`, if it is free.
std::optional<InstancePick> AtSpan(const mig::GpuMigModel& gpu, const mig::Layout& layout,
                                   int profile, uint32_t span);
// The lowest-start legal placement of exactly `profile`.
std::optional<model::Placement> LowestStart(const mig::GpuMigModel& gpu, const mig::Layout& layout,
                                            int profile);
// Legal (profile, placement) pairs left on a layout, over every allowed profile.
int LegalPlacementsLeft(const mig::GpuMigModel& gpu, const mig::Layout& layout);

// HAMi's node score before placing (hami-protocol.md 7.1): 10 * (used/count + cores/100 +
// mem/total), summed over the node's GPUs, in float as Go computes it.
float HamiNodeScore(const state::NodeState& node);
// HAMi's GPU visiting order on a node for a gpu policy of "spread" (its default) or "binpack":
// the scheduler's own (sched::HamiVisitOrder) for a one-instance container.
std::vector<int> HamiDeviceOrder(const state::NodeState& node, bool binpack);

// The instances a static partition creates up front on a GPU: all 1g, or a balanced layout.
std::vector<InstancePick> StaticSlots(const mig::GpuMigModel& gpu, bool balanced);

}  // namespace tessera::sim::mig_replay
