#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/mig/layout.h"
#include "core/sched/preferences.h"
#include "core/sched/request.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// A MIG request is a "near miss" when its memory is above a profile's by at most this share of
// that profile's memory: `gpumem: 20000` on an A100-40GB needs a whole 7g.40gb because 3g.20gb
// is 19968 MiB, 0.2% less. Requests a few percent over a profile are almost always sizes
// rounded to a GB figure, not a real need for twice the memory; further above, the user meant
// the larger profile. Explain and the webhook's admission warning both use it (docs/explain.md).
inline constexpr int64_t kNearMissPercent = 5;

// One instance of a MIG GPU model taking more than the request needs, and what to ask instead.
struct NearMiss {
  std::string container;        // the container asking (its name)
  std::string gpu_type;         // the GPU's model as its node registers it
  int32_t requested_mib = 0;    // what one instance asks
  std::string taken_profile;    // what the request takes now; empty when no profile covers it
  int32_t taken_mib = 0;        // that profile's memory
  std::string nearest_profile;  // the largest profile just below the request
  int32_t nearest_mib = 0;      // ask at most this to fit it
};

// The near miss of one instance asking `demand` on a GPU with `model`'s rules, when there is
// one: the allowed profile with the most memory below the request, no more than
// kNearMissPercent below it, that covers the request's cores (ties: the profile the scheduler
// would choose for that memory). Pure; `gpu_type` and `container` are copied into the answer.
std::optional<NearMiss> FindNearMiss(const mig::GpuMigModel& model,
                                     const mig::InstanceDemand& demand, const std::string& gpu_type,
                                     const std::string& container);

// One MIG GPU model present in a cluster: the type its nodes register and its rules.
struct MigGpuKind {
  std::string type;
  mig::GpuMigModel model;
};

// The MIG GPU models of the cluster's nodes, one per registered type (the first GPU of each seen),
// in type order: ClusterState::mig_kinds, kept as nodes change, so no node is walked.
std::vector<MigGpuKind> MigGpuKindsOf(const state::ClusterState& state);

// Every near miss of the pod's GPU containers on the given kinds, one per (container, kind),
// leaving out kinds the pod's preferences exclude (its vgpu-mode, GPU type filters). A memory
// percentage counts against the largest allowed profile, as the filter counts it
// (MemoryRequest). For the webhook, which knows the pod but not yet its node.
std::vector<NearMiss> FindNearMisses(const PodRequest& request, const PodPreferences& prefs,
                                     const std::vector<MigGpuKind>& kinds);

// "container main asks 20000 MiB, 32 MiB over 3g.20gb (19968 MiB) on NVIDIA A100-SXM4-40GB, so
// it takes a 7g.40gb (40192 MiB): ask at most 19968 MiB to fit 3g.20gb". Short enough for an
// admission warning (Kubernetes asks for 120 characters where possible and may cut past 256).
std::string FormatNearMiss(const NearMiss& miss);
// All of them, one string each (the webhook's admission warnings).
std::vector<std::string> FormatNearMisses(const std::vector<NearMiss>& misses);

}  // namespace tessera::sched
