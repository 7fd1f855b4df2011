#include "core/sched/node_ranking.h"

#include <algorithm>
#include <cmath>

#include "core/sched/node_scoring.h"

namespace tessera::sched {
namespace {

// Fragmentation deltas are compared in steps of 4% of a GPU (FGD's integer scores have about
// this resolution near zero; measured in docs/replay.md).
constexpr double kFragmentationQuantum = 0.04;

// MIG placeability drops are sums of weights times small integers; this rounds away float noise.
constexpr double kPlaceabilityQuantum = 1e-6;

}  // namespace

NodeRank RankNode(const CycleState& cycle, const state::NodeState& node, const NodeFit& fit,
                  const NodeCapacity& capacity, NodeCapacity* scratch) {
  NodeRank rank{0, cycle.tessera_nodes() ? fit.score : NodeScore(node, {}),
                std::all_of(node.usage.begin(), node.usage.end(),
                            [](const state::DeviceUsage& u) { return u.used == 0; }),
                fit.mig_planned};
  if (!cycle.tessera_nodes()) return rank;
  if (fit.fits && fit.mig_planned) {
    rank.bucket = std::round(fit.mig_drop / kPlaceabilityQuantum);
  } else if (fit.fits && cycle.by_fragmentation()) {
    const double before = NodeFragmentation(capacity, cycle.target());
    *scratch = capacity;
    ApplyToCapacity(node, fit.slots, cycle.cpu_milli(), scratch);
    const double after = NodeFragmentation(*scratch, cycle.target());
    rank.bucket = std::floor((after - before) / kFragmentationQuantum);
  }
  return rank;
}

}  // namespace tessera::sched
