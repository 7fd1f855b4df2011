#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/common/result.h"
#include "core/config/scheduler_config.h"
#include "core/model/pod.h"
#include "core/sched/decision.h"
#include "core/sched/fragmentation.h"
#include "core/sched/mig_demand.h"
#include "core/sched/mig_placement.h"
#include "core/sched/mig_rank_bound.h"
#include "core/sched/preferences.h"
#include "core/sched/rank_bound.h"
#include "core/sched/request.h"
#include "core/state/quota_book.h"

namespace tessera::sched {

// The pre-filter phase's first half: what a pod asks for and how it wants to be placed, read from
// its resources and annotations once per scheduling cycle. Nothing after it reads an annotation.
struct ParsedPod {
  Result<PodRequest> request = Error{""};
  // Parsed only for a pod that asks for GPUs (a pod without is passed through whatever its
  // annotations say, as HAMi does).
  std::optional<Result<PodPreferences>> prefs;
  // nvidia.com/vgpu-mode on its own: the demand mix counts a pod whose other annotations are
  // malformed, so the mode is known even where `prefs` is an error.
  Result<VgpuMode> vgpu_mode = VgpuMode::kAny;
  // nvidia.com/use-gputype as written (comma list, trimmed): the demand shape's GPU type.
  std::string demand_type;
  int64_t cpu_milli = 0;
};

ParsedPod ParsePod(const model::Pod& pod, const config::NvidiaConfig& nvidia,
                   const PolicyDefaults& defaults);

// The pre-filter's rules on a parsed pod, in the cycle's order: an invalid request, a pod asking
// for no GPU (HAMi's pass-through), invalid preferences. Returns false with `decision`'s outcome
// and message set when one decides the pod; true when the pod goes on to the filter, its
// preferences then carrying what `quotas` leave its namespace. `decision` gets the containers'
// names either way (once the request parses).
bool PreFilter(const model::Pod& pod, const state::QuotaBook& quotas, ParsedPod* parsed,
               Decision* decision);

// The pre-filter phase's second half: everything the filter and score phases share for one pod
// against the cluster as it is now (the demand mix's target, the MIG goal, which rankings
// apply). Built once per evaluation; holds pointers into itself, so it does not move.
class CycleState {
 public:
  // `request`, `prefs` (its quota already set), the mixes and `defaults` must outlive it.
  // `fleet_signals`: what the cluster shows that the MIG weights depend on (a copy is kept).
  CycleState(const PodRequest& request, const PodPreferences& prefs, int64_t cpu_milli,
             const DemandMix& mix, const MigDemandMix& mig_mix, const PolicyDefaults& defaults,
             const MigFleetSignals& fleet_signals = {});
  // The same cycle for another thread: the inputs are shared (read only), the working caches
  // (MIG weights and arrangements) are its own.
  struct ForAnotherThread {};
  CycleState(const CycleState& other, ForAnotherThread /*tag*/)
      : CycleState(other.request_, other.prefs_, other.cpu_milli_, other.mix_, other.mig_mix_,
                   other.defaults_, other.fleet_signals_) {}
  CycleState(const CycleState&) = delete;
  CycleState& operator=(const CycleState&) = delete;

  const PodRequest& request() const { return request_; }
  const PodPreferences& prefs() const { return prefs_; }
  int64_t cpu_milli() const { return cpu_milli_; }

  // The node policy counts fragmentation: tessera's node ranking and its ties (HAMi's named
  // policies rank by HAMi's node score alone).
  bool tessera_nodes() const { return tessera_nodes_; }
  // The node policy is fragmentation alone: a node's rank is its steps (NodePolicy).
  bool fragmentation_only() const { return fragmentation_only_; }
  // Nodes are ranked by fragmentation growth against the demand mix (tessera, once a mix exists).
  bool by_fragmentation() const { return by_fragmentation_; }
  // A pod asking one shared GPU also chooses its GPU by fragmentation (FGD's GPU choice).
  bool rank_gpus() const { return rank_gpus_; }
  // The one-GPU container when rank_gpus() (else nullptr).
  const ContainerRequest* single() const { return single_; }
  const PreparedTarget& target() const { return prepared_; }
  // The floor under a node's fragmentation rank (enabled when by_fragmentation()).
  const RankBound& rank_bound() const { return rank_bound_; }
  // The floor under a MIG node's placeability rank (enabled when the MIG plan is made from the
  // nodes' summaries and ranks nodes).
  const MigRankBound& mig_rank_bound() const { return mig_rank_bound_; }
  // Whether either bound can show a node cannot be chosen.
  bool bounds_ranks() const { return rank_bound_.enabled() || mig_rank_bound_.enabled(); }
  // The demand-aware MIG plan's goal; nullptr when a HAMi GPU policy places MIG instances.
  const MigGoal* mig_goal() const { return goal_; }
  // Nodes in the same state give the same answer: the pod names no GPU UUID (where it does,
  // the answer is shared by the nodes of a state whose GPUs it does not name).
  bool cacheable() const { return cacheable_; }

 private:
  const PodRequest& request_;
  const PodPreferences& prefs_;
  int64_t cpu_milli_;
  const DemandMix& mix_;
  const MigDemandMix& mig_mix_;
  const PolicyDefaults& defaults_;
  MigFleetSignals fleet_signals_;
  bool tessera_nodes_;
  bool fragmentation_only_;
  bool by_fragmentation_;
  const ContainerRequest* single_ = nullptr;
  bool rank_gpus_;
  PreparedTarget prepared_;
  RankBound rank_bound_;
  MigRankBound mig_rank_bound_;
  MigWeights mig_weights_;
  MigArrangeCache mig_cache_;   // per cycle: MIG layouts seen on several nodes are scored once
  MigPlanBuffers mig_buffers_;  // per cycle: the MIG plan's working space, node after node
  MigPlanMemo mig_plans_;       // per cycle: nodes with the same MIG GPUs and layouts plan once
  MigGoal mig_goal_storage_;
  const MigGoal* goal_;
  bool cacheable_;
};

}  // namespace tessera::sched
