#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/model/pod.h"
#include "core/sched/mig_demand.h"
#include "core/sched/node_policy.h"
#include "core/state/quota_book.h"

namespace tessera::sched {

// hami.io/gpu-scheduler-policy: one name or a comma list (hami-protocol.md 7.3), plus tessera's
// own `tessera`: a one-GPU shared request takes the GPU where fragmentation grows least and MIG
// instances are planned for placeability; HAMi's names that come with it order the GPUs among
// equals and for everything else (`tessera` alone: HAMi's spread).
struct GpuPolicy {
  std::vector<std::string> tokens;  // HAMi's names as written, validated (`tessera` left out)
  bool tessera = false;
  bool mutex = false;
  bool topology_aware = false;
  bool IsChain() const;  // a comma list or "numa": ordered sort keys
  std::vector<std::string> Chain(bool numa_bind) const;
  std::string Single() const { return tokens.empty() ? "spread" : tokens.front(); }
};

// hami.io/device-scoring-weights: "slot=<n>,core=<n>,memory=<n>".
struct ScoringWeights {
  long long slot = 1;
  long long core = 1;
  long long memory = 1;
};

// The scheduler defaults (command-line flags) a pod's annotations may override.
struct PolicyDefaults {
  // Where neither a pod nor a flag names a policy, tessera's own ranking decides
  // (docs/placement.md); a named HAMi policy gets exactly HAMi's semantics.
  NodePolicy node = NodePolicy::Tessera();
  // Operators' node policies (--define-node-policy), which a pod may name like the built-ins.
  std::vector<NodePolicy> defined_node_policies;
  std::string gpu = "tessera";
  double demand_decay = 0.9995;  // per observed pod: the mix follows the last few thousand pods
  // MIG placement (docs/placement.md): what is assumed of future requests before and alongside
  // the observed ones, and whether an instance may get a larger profile than the smallest that
  // covers it when that keeps more placeability.
  MigPrior mig_prior;
  bool mig_allow_larger_profiles = false;
};

// nvidia.com/vgpu-mode: which kind of GPU a pod may use. kAny when the annotation is absent.
enum class VgpuMode { kAny, kMig, kHamiCore, kMps };
std::string_view ToString(VgpuMode mode);  // the annotation's value ("" for kAny)

// Everything a pod's annotations say about where it may go and how to choose.
struct PodPreferences {
  std::vector<std::string> use_types;  // upper-cased substrings
  std::vector<std::string> nouse_types;
  std::vector<std::string> use_uuids;
  std::vector<std::string> nouse_uuids;
  // model::UuidBits of each UUID the two lists name (set by ParsePreferences; empty with a list
  // not empty: not worked out, NamesAnyGpuOf then compares every UUID).
  std::vector<uint64_t> named_uuid_bits;
  VgpuMode vgpu_mode = VgpuMode::kAny;
  bool numa_bind = false;
  NodePolicy node_policy = NodePolicy::Tessera();
  GpuPolicy gpu_policy;
  ScoringWeights weights;
  // What the pod's namespace may still use under its GPU quotas (set by the scheduler from the
  // cluster state, not from annotations); nullopt when no quota applies.
  std::optional<state::QuotaHeadroom> quota{};
};

// nvidia.com/vgpu-mode, one of mig, hami-core, mps (trimmed); kAny when absent. Read here only.
Result<VgpuMode> ParseVgpuMode(const model::Pod& pod);
// Whether a device in `device_mode` may take the pod: no mode asked for, or the value names it
// (HAMi's direction: the annotation's value contains the device's mode, so a device whose raw
// mode is a part of the value, such as "core" of "hami-core", is admitted as HAMi admits it).
bool ModeAdmits(VgpuMode vgpu_mode, std::string_view device_mode);
// The pod may be placed on MIG instances (it is part of the MIG demand).
inline bool MayUseMig(VgpuMode vgpu_mode) {
  return vgpu_mode == VgpuMode::kAny || vgpu_mode == VgpuMode::kMig;
}
// The pod asks for MIG instances and nothing else.
inline bool MigOnly(VgpuMode vgpu_mode) { return vgpu_mode == VgpuMode::kMig; }

Result<GpuPolicy> ParseGpuPolicy(const std::string& text);
Result<ScoringWeights> ParseScoringWeights(const std::string& text);
// Unknown policy names and malformed weights are errors naming the annotation (unlike HAMi,
// which silently falls back, hami-protocol.md 13.10).
Result<PodPreferences> ParsePreferences(const model::Pod& pod, const PolicyDefaults& defaults);

}  // namespace tessera::sched
