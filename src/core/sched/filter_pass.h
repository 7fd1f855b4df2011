#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/task_runner.h"
#include "core/sched/cycle_state.h"
#include "core/sched/fit.h"
#include "core/sched/node_evaluator.h"
#include "core/sched/node_ranking.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// What the filter and score phases found. Nodes in one equivalence class share one entry of
// `evaluated`; full fits are few (the cheap filter rules most nodes out).
struct FilterOutcome {
  static constexpr uint32_t kNone = ~0U;
  struct Evaluated {
    const state::NodeState* representative = nullptr;
    uint32_t fit = kNone;  // index into `fits`; kNone when the cheap filter ruled it out
    bool fits = false;
    NodeRank rank;  // when it fits
  };
  std::vector<Evaluated> evaluated;
  std::vector<NodeFit> fits;
  // Refused nodes and their entry of `evaluated` (kNone: the node is unusable), collected only
  // when reasons are.
  std::vector<std::pair<const state::NodeState*, uint32_t>> refused;
  const state::NodeState* best = nullptr;
  uint32_t best_eval = kNone;
  // Nodes never fitted because the cycle's RankBound showed they could not rank first.
  uint32_t outranked = 0;
  const NodeFit& best_fit() const { return fits[evaluated[best_eval].fit]; }
  // Makes the best node's fit whole: the pass leaves MIG plans without their assignments
  // (NodeFit::slots_omitted), and the chosen node's are worked out again here, by the same
  // deterministic plan.
  void CompleteBestFit(const CycleState& cycle);
};

// The equivalence rule: whether `node` answers a pod as every node of its state class does
// (ClusterState's classes: the same devices, usage and cordons). Not for a node whose GPU pairs
// are scored (topology), nor where the pod's UUID filters name one of its GPUs.
// `names_no_uuid`: the pod has no UUID filter (CycleState::cacheable, known once per cycle).
inline bool SharesStateClassAnswer(const state::NodeState& node, bool names_no_uuid,
                                   const PodPreferences& prefs) {
  return node.pair_scores.empty() && node.state_class >= 0 &&
         (names_no_uuid || !NamesAnyGpuOf(prefs, node));
}

// Filters and scores nodes one at a time into `out` (its `evaluated` and `fits`), sharing one
// evaluation among the nodes of an equivalence class ClusterState keeps (no hashing or state
// comparison here). A pod's GPU UUID filters act alike on every node of a class whose GPUs they
// do not name; the few nodes they name are evaluated alone.
class FilterPass {
 public:
  static constexpr uint32_t kUnusable = FilterOutcome::kNone;
  // A node skipped by the rank bound (a pass over shares marks it so for the choice).
  static constexpr uint32_t kOutranked = FilterOutcome::kNone - 1;

  // `state_class_bound`: ClusterState::state_class_bound(), or 0 for no equivalence cache.
  // `skip_outranked`: a node not yet evaluated whose rank bound shows it cannot rank before
  // out->best is not fitted (kOutranked).
  FilterPass(const CycleState& cycle, size_t state_class_bound, size_t expected_nodes,
             FilterOutcome* out, bool skip_outranked = false);

  // The node's entry of out->evaluated, kUnusable for a node that takes no pod at all, or
  // kOutranked. Inline: on a cluster of alike nodes this is the whole per-node cost.
  uint32_t Evaluate(const state::NodeState& node) {
    last_unshared_ = kUnusable;
    if (!node.usable()) return kUnusable;
    const bool use_cache = SharesStateClassAnswer(node, cycle_.cacheable(), cycle_.prefs()) &&
                           static_cast<size_t>(node.state_class) < by_class_.size();
    if (use_cache && by_class_[node.state_class] != FilterOutcome::kNone) {
      return by_class_[node.state_class];
    }
    return EvaluateAnew(node, use_cache);
  }

  // Whether this pass skips outranked nodes (asked for, and the cycle has a rank bound).
  bool skips_outranked() const { return skip_outranked_; }

  // Whether most nodes so far (of `seen`) were not answered by the equivalence cache: then
  // prefetching what an evaluation reads pays for the nodes ahead.
  bool MostlyAnew(size_t seen) const { return 2 * anew_ > seen; }

  // After the choice has seen `evaluated` (the last Evaluate's answer): drops its fit, and its
  // entry, when no other node shares it and it is not the best, so a pass over nodes that all
  // fit keeps a few, not one per node. Only for a pass that chooses as it goes.
  void ForgetUnneededFit(uint32_t evaluated);

 private:
  // Out of line, as is the rank bound's check it starts with (after the cache: a class already
  // evaluated costs less than the bound).
  uint32_t EvaluateAnew(const state::NodeState& node, bool use_cache);

  const CycleState& cycle_;
  NodeEvaluator evaluator_;
  std::vector<uint32_t> by_class_;
  FilterOutcome* out_;
  bool skip_outranked_;
  uint32_t last_unshared_ = kUnusable;  // the last evaluation no other node can share
  size_t anew_ = 0;                     // nodes not answered by the cache
};

// Out of line: the refused list grows only where nodes refuse (kNone: the node is unusable).
void RecordRefusal(const state::NodeState& node, uint32_t evaluated, FilterOutcome* out);

// The score phase's choice among the evaluated nodes, in the candidates' order (the first of
// equals wins, as in one pass over them): records `node` as refused or as the best so far.
inline void ConsiderNode(const CycleState& cycle, const state::NodeState& node, uint32_t evaluated,
                         bool collect_refusals, FilterOutcome* out) {
  if (evaluated == FilterPass::kUnusable || !out->evaluated[evaluated].fits) {
    if (collect_refusals) RecordRefusal(node, evaluated, out);
    return;
  }
  const FilterOutcome::Evaluated& e = out->evaluated[evaluated];
  if (out->best == nullptr ||
      RanksBefore(e.rank, out->evaluated[out->best_eval].rank, node, *out->best, cycle)) {
    out->best = &node;
    out->best_eval = evaluated;
  }
}

// The filter and score phases over `nodes`, in `shares` tasks of `runner` (nullptr or 1: on
// this thread, in one pass). Each task evaluates a contiguous share with its own cycle state and
// equivalence cache; the choice is then made in the nodes' order, so the outcome is the same
// for any number of shares. With `skip_outranked`, once a node fits, a node that the cycle's
// RankBound shows cannot rank before the best so far (of the pass, or of the task's share) is
// not fitted at all: the same choice, and a refusal's reasons are only asked for when no node
// fits, so none is missed.
FilterOutcome FilterNodes(const CycleState& cycle, std::span<const state::NodeState* const> nodes,
                          size_t state_class_bound, bool collect_refusals, TaskRunner* runner,
                          size_t shares, bool skip_outranked = true);

// Post-filter: why one node refused the pod, and whether evicting pods could make room there.
struct Refusal {
  const state::NodeState* node = nullptr;
  // Why, shared by the nodes of its equivalence class (its code is the fit's, kUnschedulable,
  // or kUnusable); it lives in the FilterOutcome the refusal came from, or for an unusable node
  // only as long as the call.
  const NodeStatus* reasons = nullptr;
  bool resolvable = false;  // ResolvableByPreemption (false for a node that takes no pod)
  // The node's own status: the reasons, kUnresolvable where evicting pods cannot help.
  NodeStatus Status() const {
    NodeStatus status = *reasons;
    if (status.code == NodeStatus::Code::kUnschedulable && !resolvable) {
      status.code = NodeStatus::Code::kUnresolvable;
    }
    return status;
  }
};

// Calls `each` for the refused nodes of `filtered` (collected with their refusals), in the
// candidates' order, each with its reason: a node ruled out by the cheap filter gets its full
// fit, a deferred reason is worked out once per equivalence class. `check_preemption` off leaves
// `resolvable` false (it costs an empty node's fit per spec). One call per node, nothing
// gathered: a list of thousands of refusals, made and freed per decision, cost 15% of a MIG
// decision that nothing fits (malloc consolidating its free lists; docs/performance.md).
void PostFilter(const CycleState& cycle, FilterOutcome* filtered, bool check_preemption,
                const std::function<void(const Refusal&)>& each);

}  // namespace tessera::sched
