#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "core/model/disruption_budget.h"
#include "core/model/pod.h"
#include "core/sched/preferences.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// Which running pods to evict from one node so that a pending pod fits there: the search that
// explain's remedy ("the fewest pods whose departure admits it") and the extender's /preempt
// share (docs/preemption.md).

// A PodDisruptionBudget as preemption counts it: the pods its selector selects, and how many of
// them may still be disrupted.
using DisruptionBudget = model::DisruptionBudget;

// A pod that may be evicted, with what a set of victims is ranked by.
struct VictimCandidate {
  std::string key;  // namespace/name
  int32_t priority = 0;
  int64_t held_mem = 0;  // GPU memory its reservation holds on the node, MiB
  std::map<std::string, std::string> labels{};
};

// What evicting a set costs, cheapest first in this order (kube-scheduler's rule puts the PDB
// violations first): PodDisruptionBudgets broken, victims, the highest victim priority, the sum
// of their priorities, GPU memory freed.
struct VictimSetCost {
  int64_t pdb_violations = 0;
  size_t victims = 0;
  int32_t highest_priority = 0;
  int64_t priority_sum = 0;
  int64_t freed_mem = 0;
  bool operator<(const VictimSetCost& o) const {
    return std::tie(pdb_violations, victims, highest_priority, priority_sum, freed_mem) <
           std::tie(o.pdb_violations, o.victims, o.highest_priority, o.priority_sum, o.freed_mem);
  }
};

struct VictimSet {
  std::vector<std::string> pods;  // highest priority first (kube-scheduler reads Pods[0] so)
  VictimSetCost cost;
};

// How many of `victims` (keys, in the order given) break a budget of `budgets`: each matching
// pod takes one from its budgets' allowances, and counts once if any goes below zero
// (kube-scheduler's filterPodsWithPDBViolation).
int64_t CountPdbViolations(std::span<const VictimCandidate* const> victims,
                           std::span<const DisruptionBudget> budgets);

// The exhaustive search on one node's copy of the state. Candidates are tried highest priority
// first, then by key; a set is tried by removing its pods' reservations from the copy, asking
// `fits`, and putting them back, so the copy is unchanged after every call.
class VictimSearch {
 public:
  VictimSearch(state::ClusterState& one_node, std::vector<VictimCandidate> candidates,
               std::span<const DisruptionBudget> budgets = {});

  struct Outcome {
    bool improved = false;  // *best was replaced
    bool stopped = false;   // the evaluation budget ran out with sets of this size untried
  };
  // Every set of `size` candidates, in lexicographic order of their positions, that costs less
  // than `*best` (any, when empty) is tried; the first cheapest that fits becomes *best. A try
  // counts in *evaluations, and none starts once it reaches `max_evaluations`.
  Outcome TrySetsOfSize(int size, const std::function<bool()>& fits, std::optional<VictimSet>* best,
                        int* evaluations, int max_evaluations);

  // Whether the pod fits with every candidate gone (one evaluation, for the caller to count).
  bool FitsWithAllGone(const std::function<bool()>& fits);
  // kube-scheduler's own way, for when the exhaustive search is cut short: every candidate gone,
  // then each put back, highest priority first, where the pod still fits. Needs
  // FitsWithAllGone; `evaluations` grows by the candidates.
  VictimSet Reprieve(const std::function<bool()>& fits, int* evaluations);

  const std::vector<VictimCandidate>& candidates() const { return candidates_; }

 private:
  VictimSetCost CostOf(const std::vector<size_t>& set) const;
  VictimSet SetOf(const std::vector<size_t>& set) const;
  bool FitsWithout(const std::vector<size_t>& set, const std::function<bool()>& fits);

  state::ClusterState& one_;
  std::vector<VictimCandidate> candidates_;
  std::span<const DisruptionBudget> budgets_;
};

struct PreemptionLimits {
  int max_victims = 4;         // the largest set the exhaustive search tries
  int max_evaluations = 2000;  // single-node fits, per node
};

struct NodeVictims {
  enum class Verdict {
    kVictims,     // `victims` admit the pod
    kFitsNow,     // the pod fits with nobody evicted: GPUs are not what keeps it out
    kNoSet,       // no set of lower-priority pods admits it: the node is dropped
    kNotGpuPod,   // the pod asks for no GPU: not this scheduler's to judge
    kInvalidPod,  // its GPU request is malformed: no eviction helps
  };
  Verdict verdict = Verdict::kNoSet;
  std::optional<VictimSet> victims;
  // false: the exhaustive search stopped at a limit, and `victims` came from the reprieve pass
  // (a set that works, maybe not the cheapest).
  bool exhaustive = true;
  int evaluations = 0;
};

// The cheapest set of pods on the one node of `one_node` (a ClusterState::Subset copy) whose
// departure admits `pod`, among those of lower priority than the pod (never the pod itself, a
// pod without a uid to name it by, or one of `spared`), checked by the scheduler's own filter on
// the copy. A copy without nodes (a node the state does not know) says kNoSet, or what the pod
// itself decides (kNotGpuPod, kInvalidPod).
NodeVictims FindVictims(state::ClusterState one_node, const model::Pod& pod,
                        const PolicyDefaults& defaults, std::span<const DisruptionBudget> budgets,
                        const std::set<std::string>& spared, const PreemptionLimits& limits = {});

}  // namespace tessera::sched
