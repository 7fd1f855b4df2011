#pragma once

#include <string_view>

// Exact annotation and label keys of HAMi's wire protocol (hami-protocol.md section 1).
namespace tessera::model::annotations {

inline constexpr std::string_view kNodeRegister = "hami.io/node-nvidia-register";
inline constexpr std::string_view kNodePairScore = "hami.io/node-nvidia-score";
inline constexpr std::string_view kNodeHandshake = "hami.io/node-handshake";
inline constexpr std::string_view kNodeLock = "hami.io/mutex.lock";
inline constexpr std::string_view kDeviceCordon = "hami.io/device-cordon";

inline constexpr std::string_view kAssignedNode = "hami.io/vgpu-node";
inline constexpr std::string_view kAssignedTime = "hami.io/vgpu-time";
inline constexpr std::string_view kDevicesToAllocate = "hami.io/vgpu-devices-to-allocate";
inline constexpr std::string_view kDevicesAllocated = "hami.io/vgpu-devices-allocated";
inline constexpr std::string_view kMigAllocations = "hami.io/vgpu-mig-allocations";
inline constexpr std::string_view kBindPhase = "hami.io/bind-phase";
inline constexpr std::string_view kBindTime = "hami.io/bind-time";

inline constexpr std::string_view kUseGpuType = "nvidia.com/use-gputype";
inline constexpr std::string_view kNoUseGpuType = "nvidia.com/nouse-gputype";
inline constexpr std::string_view kUseGpuUuid = "nvidia.com/use-gpuuuid";
inline constexpr std::string_view kNoUseGpuUuid = "nvidia.com/nouse-gpuuuid";
inline constexpr std::string_view kVgpuMode = "nvidia.com/vgpu-mode";
inline constexpr std::string_view kNumaBind = "nvidia.com/numa-bind";
inline constexpr std::string_view kGpuPolicy = "hami.io/gpu-scheduler-policy";
inline constexpr std::string_view kNodePolicy = "hami.io/node-scheduler-policy";
inline constexpr std::string_view kScoringWeights = "hami.io/device-scoring-weights";

// tessera's own: written on a pending pod to make kube-scheduler try it again, when capacity
// came free after its last attempt and kube-scheduler will not ask on its own (docs/serve.md).
inline constexpr std::string_view kRequeuedAt = "tessera.io/requeued-at";
// tessera's own: written by the agent on its Node, the MIG instances on its GPUs that tessera
// did not create (codec/foreign_mig.h); tessera's scheduler places nothing on their slices.
// HAMi's scheduler does not read it.
inline constexpr std::string_view kForeignMigInstances = "tessera.io/foreign-mig-instances";
// tessera's own: written by the agent on its Node, what NVML measured on each GPU and MIG
// instance (utilisation, memory used; codec/gpu_usage.h), for the scheduler's /ui. Never read
// by scheduling: a change to it alone changes no scheduling state.
inline constexpr std::string_view kGpuUsage = "tessera.io/gpu-usage";

// tessera's own: written by a defragmentation run on a pod it is about to evict, the node the
// plan places its replacement on. Once the pod is terminating, the scheduler places the next
// pod of the same controller there when it fits (scheduler/defrag_moves.h).
inline constexpr std::string_view kDefragMovingTo = "tessera.io/defrag-moving-to";

// The device type word written into allocation annotations.
inline constexpr std::string_view kNvidiaType = "NVIDIA";

}  // namespace tessera::model::annotations
