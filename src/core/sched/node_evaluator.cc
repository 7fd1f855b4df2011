#include "core/sched/node_evaluator.h"

#include "core/sched/node_scoring.h"

namespace tessera::sched {

bool NodeEvaluator::MayFit(const state::NodeState& node) const {
  return sched::MayFit(node, cycle_.request(), cycle_.prefs());
}

NodeFit NodeEvaluator::FitAndRank(const state::NodeState& node, NodeRank* rank, bool with_slots) {
  if (cycle_.rank_gpus()) {
    CapacityOf(node, &capacity_);
    fragmentation_.Reset(capacity_, cycle_.target());
    SingleGpuRanks(node, capacity_, *cycle_.single(), cycle_.cpu_milli(), cycle_.target(),
                   &gpu_ranks_, &fragmentation_);
  }
  NodeFit fit =
      FitPodOnNode(node, cycle_.request(), cycle_.prefs(),
                   cycle_.rank_gpus() ? &gpu_ranks_ : nullptr, cycle_.mig_goal(), with_slots);
  // RankNode reads the capacity only to rank a shared placement by fragmentation.
  if (!cycle_.rank_gpus() && cycle_.by_fragmentation() && fit.fits && !fit.mig_planned) {
    CapacityOf(node, &capacity_);
    fragmentation_.Reset(capacity_, cycle_.target());
  }
  *rank = RankNode(cycle_, node, fit, capacity_, &fragmentation_);
  return fit;
}

NodeStatus NodeEvaluator::RefusalReason(const state::NodeState& node, const NodeFit& fit) const {
  if (fit.status.code != NodeStatus::Code::kNotWorkedOut) return fit.status;
  return FitForRefusal(node).status;
}

NodeFit NodeEvaluator::FitForRefusal(const state::NodeState& node) const {
  return FitPodOnNode(node, cycle_.request(), cycle_.prefs());
}

bool PreemptionCheck::Resolvable(const state::NodeState& node) {
  // Instances tessera did not create stay when every pod is gone: such a node's answer is its
  // own, not its spec's.
  if (node.spec_id < 0 || !node.foreign_mig.empty() || NamesAnyGpuOf(cycle_.prefs(), node)) {
    return ResolvableByPreemption(node, cycle_.request(), cycle_.prefs());
  }
  const auto spec = static_cast<size_t>(node.spec_id);
  if (spec >= by_spec_.size()) by_spec_.resize(spec + 1, -1);
  if (by_spec_[spec] < 0) {
    by_spec_[spec] = ResolvableByPreemption(node, cycle_.request(), cycle_.prefs()) ? 1 : 0;
  }
  return by_spec_[spec] == 1;
}

}  // namespace tessera::sched
