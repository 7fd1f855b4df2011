#pragma once

#include <vector>

#include "core/sched/cycle_state.h"
#include "core/sched/fit.h"
#include "core/sched/fragmentation.h"
#include "core/sched/node_ranking.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// The filter and score phases for one node at a time, with working buffers reused from node to
// node (one evaluator per cycle; not shared between threads).
class NodeEvaluator {
 public:
  explicit NodeEvaluator(const CycleState& cycle) : cycle_(cycle) {}

  // The cheap filter: false only where the full filter would refuse the pod.
  bool MayFit(const state::NodeState& node) const;

  // The full filter (HAMi's fit, or the MIG plan) and, where the node fits, its rank.
  // `with_slots` off: a MIG plan may leave out its assignments (NodeFit::slots_omitted).
  NodeFit FitAndRank(const state::NodeState& node, NodeRank* rank, bool with_slots = true);

  // Why the full filter refused a node; the MIG plan does not say (kNotWorkedOut: it only knows
  // that no plan exists), so then HAMi's pass is run for its reasons.
  NodeStatus RefusalReason(const state::NodeState& node, const NodeFit& fit) const;
  // The fit of a node the cheap filter ruled out (MayFit false: no order of its GPUs takes the
  // pod), for its refusal only: no GPU ranks and no node rank are worked out, and its reason is
  // formed (not deferred).
  NodeFit FitForRefusal(const state::NodeState& node) const;

 private:
  const CycleState& cycle_;
  NodeCapacity capacity_;
  NodeFragmentationWorkspace fragmentation_;  // Reset with capacity_
  std::vector<double> gpu_ranks_;
};

// Post-filter: whether evicting pods could make room on a refused node
// (ResolvableByPreemption), answered once per spec id where the pod's UUID filters do not tell
// nodes of one spec apart: this runs for every refused node.
class PreemptionCheck {
 public:
  explicit PreemptionCheck(const CycleState& cycle) : cycle_(cycle) {}
  bool Resolvable(const state::NodeState& node);

 private:
  const CycleState& cycle_;
  std::vector<int8_t> by_spec_;  // -1 unknown, 0 no, 1 yes
};

}  // namespace tessera::sched
