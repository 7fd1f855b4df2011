#pragma once

#include <optional>

#include "core/sched/cycle_state.h"
#include "core/sched/fit.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// The score phase's answer for one node that fits: how it compares with the others.
struct NodeRank {
  // Lower first. Under a policy of fragmentation alone (tessera's): the fragmentation (or MIG
  // placeability) cost in steps, which the rank bounds floor; under any other policy: minus the
  // weighted sum of its plugins' scores (NodePolicy).
  double bucket = 0;
  float score = 0;    // tessera: NodeFit::score; HAMi's policies: HAMi's score before the pod
  bool idle = false;  // no GPU of the node is in use (before the pod)
  bool mig = false;   // placed by the MIG plan (ranked by placeability, then fullness)
};

// Scores a node the filter admitted (`fit.fits`). `capacity` is the node's capacity as
// CapacityOf gives it when cycle.by_fragmentation(); `workspace`, when given, is Reset for it
// (the same rank, worked out faster).
NodeRank RankNode(const CycleState& cycle, const state::NodeState& node, const NodeFit& fit,
                  const NodeCapacity& capacity, NodeFragmentationWorkspace* workspace = nullptr);

// The first by name (ClusterState keeps each node's position in name order).
inline bool NameBefore(const state::NodeState& a, const state::NodeState& b) {
  if (a.name_order >= 0 && b.name_order >= 0) return a.name_order < b.name_order;
  return a.name < b.name;
}

// Whether `candidate` ranks before `best` under the pod's node policy. Inline: it runs once per
// node that fits, and the cached filter over 5000 nodes is tens of microseconds.
inline bool RanksBefore(const NodeRank& candidate, const NodeRank& best,
                        const state::NodeState& candidate_node, const state::NodeState& best_node,
                        const CycleState& cycle) {
  // Expected fragmentation is an estimate: differences below a quantum (a small share of one
  // GPU) are noise, and chasing them scatters pods.
  if (candidate.bucket != best.bucket) return candidate.bucket < best.bucket;
  // A policy without fragmentation: equal sums go to the first by name (HAMi leaves them to
  // goroutine timing).
  if (!cycle.tessera_nodes()) return NameBefore(candidate_node, best_node);
  if (cycle.by_fragmentation() && !candidate.mig && !best.mig) {
    // binpack among equals: a node already in use before an idle one (an idle node stays whole
    // for large pods and can be scaled down), then the first in a fixed node order, as FGD's
    // simulator breaks ties (the first top-scoring node of a node list shuffled once). Pod after
    // pod then fills the same nodes first, on every resource at once: a cluster-wide first fit.
    // The fullest node instead jumps between half-used nodes: 0.1 points of allocation less on
    // average over the 13 traces of the replay, up to 0.3 on some (docs/replay.md). The order
    // is a hash of the name, not the name itself, so that nodes named alike (one rack, one
    // pool) are not filled as a block, and it does not change when nodes come and go.
    if (candidate.idle != best.idle) return best.idle;
    if (candidate_node.tie_order != best_node.tie_order) {
      return candidate_node.tie_order < best_node.tie_order;
    }
    return NameBefore(candidate_node, best_node);
  }
  // MIG plans, and nodes without a demand mix yet: the fullest node, then the first by name.
  if (candidate.score != best.score) return candidate.score > best.score;
  return NameBefore(candidate_node, best_node);
}

// Whether `node` cannot rank before `best` (RanksBefore) whatever its fit, by the cycle's
// RankBound (MigRankBound for MIG nodes): its lowest bucket is above the best's, or equal with
// the ties already lost (an idle node after one in use, then the fixed node order; for MIG, a
// score that cannot reach the best's). False where the bound says nothing.
inline bool Outranked(const CycleState& cycle, const state::NodeState& node, const NodeRank& best,
                      const state::NodeState& best_node) {
  if (node.any_mig) {
    const std::optional<MigRankBound::NodeBound> bound =
        cycle.mig_rank_bound().Bound(node, best.bucket);
    if (!bound) return false;
    if (bound->lowest_bucket != best.bucket) return bound->lowest_bucket > best.bucket;
    // Equal buckets: the fuller node, then the first by name (RanksBefore; a node ranked by
    // MIG placeability never spreads).
    if (bound->highest_score != best.score) return bound->highest_score < best.score;
    return !NameBefore(node, best_node);
  }
  const std::optional<double> lowest = cycle.rank_bound().LowestBucket(node);
  if (!lowest) return false;
  // Whether a node whose floor is `floor` ranks after the best whatever its fit.
  const auto after_best = [&](double floor) {
    if (floor != best.bucket) return floor > best.bucket;
    // Equal buckets: a MIG plan as the best is compared by score, which the bound does not know.
    if (best.mig) return false;
    if (node.totals.idle != best.idle) return node.totals.idle;
    if (node.tie_order != best_node.tie_order) return node.tie_order > best_node.tie_order;
    return !NameBefore(node, best_node);
  };
  if (after_best(*lowest)) return true;
  // The cheap floor leaves the node in: the tighter one reads its GPUs (on nodes that all
  // differ a little, the cheap floor is below every node's bucket and would skip none).
  if (*lowest >= best.bucket) return false;
  const std::optional<double> tighter = cycle.rank_bound().TighterLowestBucket(node);
  return tighter && *tighter > *lowest && after_best(*tighter);
}

}  // namespace tessera::sched
