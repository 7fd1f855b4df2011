#pragma once

#include "core/sched/cycle_state.h"
#include "core/sched/fit.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// The score phase's answer for one node that fits: how it compares with the others.
struct NodeRank {
  double bucket = 0;  // tessera: the fragmentation (or MIG placeability) cost in quanta; else 0
  float score = 0;    // tessera: NodeFit::score; HAMi's policies: HAMi's score before the pod
  bool idle = false;  // no GPU of the node is in use (before the pod)
  bool mig = false;   // placed by the MIG plan (ranked by placeability, then fullness)
};

// Scores a node the filter admitted (`fit.fits`). `capacity` is the node's capacity as
// CapacityOf gives it when cycle.by_fragmentation(); `scratch` is working space.
NodeRank RankNode(const CycleState& cycle, const state::NodeState& node, const NodeFit& fit,
                  const NodeCapacity& capacity, NodeCapacity* scratch);

// Whether `candidate` ranks before `best` under the pod's node policy.
bool RanksBefore(const NodeRank& candidate, const NodeRank& best,
                 const state::NodeState& candidate_node, const state::NodeState& best_node,
                 const CycleState& cycle);

}  // namespace tessera::sched
