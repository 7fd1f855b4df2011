#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/device.h"
#include "core/sched/node_status.h"
#include "core/sched/preferences.h"
#include "core/sched/request.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// One device granted to one container: a share of a GPU, or one MIG instance on it.
struct DeviceAssignment {
  int device = -1;       // index into the node's devices
  int32_t mem = 0;       // MiB accounted (the profile's memory for MIG)
  int32_t cores = 0;     // percent accounted (the profile's core share for MIG)
  int mig_profile = -1;  // index into the device's profiles; -1 when not MIG
  model::Placement placement;
};
using SlotAssignments = std::vector<std::vector<DeviceAssignment>>;  // per allocation slot

// The filter phase's answer for one node.
struct NodeFit {
  bool fits = false;
  NodeStatus status;  // why it does not fit (kNotWorkedOut: the MIG plan did not say)
  SlotAssignments slots;
  float score = 0;  // node score after placing the pod (binpack: higher is fuller)
  // With a MIG goal, for a pod placed on MIG GPUs: how much the node's placeability drops.
  double mig_drop = 0;
  bool mig_planned = false;  // placed by the goal-driven MIG plan
  // A MIG plan that fits, asked for without its assignments: `score` and `mig_drop` are the
  // plan's, `slots` is empty; FitPodOnNode with them gives the same plan in full.
  bool slots_omitted = false;
};

struct MigGoal;  // core/sched/mig_placement.h

// Filter phase for one node: HAMi's Fit checks in HAMi's order, per container, with MIG
// instances placed jointly per GPU (exact), and a joint search across the node's MIG GPUs when
// the container-by-container pass fails. Pure: reads the node, writes nothing.
// `device_rank`, when given, orders the GPUs for one-GPU shared requests before HAMi's order
// (lowest rank tried first); the fragmentation-aware scorer passes each GPU's fragmentation
// after the placement. `mig_goal`, when given, places a pod whose admitted GPUs are all MIG by
// the demand-aware plan (PlanMigPlacement) instead of HAMi's pass.
// `with_slots` off lets the demand-aware MIG plan leave out its assignments
// (NodeFit::slots_omitted; not where a quota must check them): ranking a node needs only the
// plan's figures, and only the chosen node's assignments are ever written.
NodeFit FitPodOnNode(const state::NodeState& node, const PodRequest& request,
                     const PodPreferences& prefs, const std::vector<double>* device_rank = nullptr,
                     const MigGoal* mig_goal = nullptr, bool with_slots = true);

// Whether preemption could make room: false when the pod would not fit even if every pod on the
// node were gone (wrong GPU type or UUID, unhealthy or cordoned GPUs, too few GPUs, too little
// memory on any GPU). The namespace's quota is left out: evicting its pods frees it too.
// kube-scheduler skips such nodes when it preempts (FailedAndUnresolvableNodes).
bool ResolvableByPreemption(const state::NodeState& node, const PodRequest& request,
                            const PodPreferences& prefs);

// Whether the pod's UUID filters (nvidia.com/use-gpuuuid, nouse-gpuuuid) name a GPU of the node:
// if not, they act on it as on every node of its spec id.
bool NamesAnyGpuOf(const PodPreferences& prefs, const state::NodeState& node);

// A cheap necessary condition for FitPodOnNode: false only when FitPodOnNode would not fit the
// pod (each container needs as many GPUs passing HAMi's per-GPU checks against the node's
// current usage as it asks for). Always true on nodes with MIG GPUs. Says nothing of the reason.
bool MayFit(const state::NodeState& node, const PodRequest& request, const PodPreferences& prefs);

// The memory `k` asks of one GPU whose memory counts as `gpu_mem_mib`, in MiB: its gpumem, or its
// percentage of that.
int32_t MemoryOf(const ContainerRequest& k, int64_t gpu_mem_mib);

// The memory `k` asks of one GPU of the node, in MiB: its gpumem, or its percentage of the GPU's
// memory (`mig`: of the largest allowed profile's, hami-protocol.md 13.2).
int32_t MemoryRequest(const state::NodeState& node, int dev, bool mig, const ContainerRequest& k);

// HAMi's per-GPU checks (Fit's checks 1-3 and 5: what the GPU is; 10: the quota; 6-14: its use;
// 15: the MIG placement), in the order the filter makes them.
enum class GpuCheck : uint8_t {
  kHealth,          // unhealthy, or held whole by a pod whose allocation cannot be read
  kCordoned,        // cordoned by the operator
  kType,            // a model or mode the pod does not allow
  kUuid,            // a UUID the pod does not allow
  kQuota,           // past the namespace's GPU quota
  kTimeSlices,      // every time-slice (task) taken
  kMutex,           // in use, and the pod asks for GPUs to itself
  kMemory,          // too little free memory
  kCores,           // too few free cores
  kExclusiveCores,  // in use, and the pod asks for all its cores
  kComputeUnits,    // every core taken, and the pod asks for none
  kMigPlacement,    // no free placement of a profile that holds the request
  kMigForeign,      // the free placements are held by instances tessera did not create
};
// The check's reason (hami-protocol.md 5.5), and its word.
Reason ReasonFor(GpuCheck check);
inline std::string_view ReasonOf(GpuCheck check) { return ReasonName(ReasonFor(check)); }

// Whether the pod's GPU type filters (nvidia.com/use-gputype, nouse-gputype: substrings of the
// upper-cased type) and nvidia.com/vgpu-mode admit a GPU of `upper_type` in `mode`: the filter's
// check 3 (kType), for callers that know a GPU model but not a GPU (the webhook, explain).
bool ModelAllowed(std::string_view upper_type, std::string_view mode, const PodPreferences& prefs);

// The checks GPU `dev` of the node fails for one device of `request` on its own, in the filter's
// order, so the first is the filter's reason for it; empty where it passes them all. `every`
// off stops at the first, as the filter does. On: a GPU failing what it is has only that check;
// otherwise the quota and every usage check are made (the MIG placement only where they pass).
std::vector<GpuCheck> FailedGpuChecks(const state::NodeState& node, int dev,
                                      const ContainerRequest& request, const PodPreferences& prefs,
                                      bool every);

// Why each GPU of the node could not take one device of `request` on its own, in HAMi's words
// (hami-protocol.md 5.5; empty where it could): the per-GPU view behind a node's reason.
std::vector<std::string> GpuReasons(const state::NodeState& node, const ContainerRequest& request,
                                    const PodPreferences& prefs);

// What a pod granted `slots` is charged against its namespace's quota (state::QuotaCollapse:
// per GPU, init containers at their peak, app containers summed), as the filter's check counts.
state::QuotaUse QuotaUseOfSlots(const SlotAssignments& slots, int num_init);

// Node score (HAMi 7.1, but counting the pod being placed): 10 * (used/count + cores/total +
// mem/total) over all GPUs of the node.
float NodeScore(const state::NodeState& node, const SlotAssignments& slots);
// The same with the pod's assignments given as totals: `tasks` devices, `cores` and `mem` summed.
float NodeScoreAdding(const state::NodeState& node, int64_t tasks, int64_t cores, int64_t mem);

}  // namespace tessera::sched
