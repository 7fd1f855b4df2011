#include "core/sched/node_ranking.h"

#include <algorithm>
#include <cmath>

#include "core/common/small_buffer.h"
#include "core/sched/mig_rank_bound.h"
#include "core/sched/node_scoring.h"

namespace tessera::sched {
namespace {

size_t TakesOf(const state::NodeState& node, const SlotAssignments& slots) {
  size_t count = 0;
  for (const auto& slot : slots) {
    for (const auto& a : slot) count += node.devices[a.device].IsMig() ? 0 : 1;
  }
  return count;
}

// The fragmentation plugin's steps (lower is better): the MIG plan's placeability drop, or the
// fragmentation the pod adds for the demand mix; 0 where neither ranks the node.
double FragmentationSteps(const CycleState& cycle, const state::NodeState& node, const NodeFit& fit,
                          const NodeCapacity& capacity, NodeFragmentationWorkspace* workspace) {
  if (fit.fits && fit.mig_planned) return std::round(fit.mig_drop / kPlaceabilityQuantum);
  if (!fit.fits || !cycle.by_fragmentation()) return 0;
  const double before =
      workspace != nullptr ? workspace->Before() : NodeFragmentation(capacity, cycle.target());
  // What the placement takes from the shared GPUs (MIG instances take no shares).
  SmallBuffer<GpuTake, 16> takes(TakesOf(node, fit.slots), GpuTake{});
  size_t count = 0;
  for (const auto& slot : fit.slots) {
    for (const auto& a : slot) {
      if (!node.devices[a.device].IsMig()) takes[count++] = GpuTake{a.device, a.mem, a.cores};
    }
  }
  const double after =
      workspace != nullptr && count == 1
          ? workspace->After(takes[0], cycle.cpu_milli())
          : NodeFragmentationAfter(capacity, cycle.target(), takes.span(), cycle.cpu_milli());
  return std::floor((after - before) / kFragmentationQuantum);
}

}  // namespace

NodeRank RankNode(const CycleState& cycle, const state::NodeState& node, const NodeFit& fit,
                  const NodeCapacity& capacity, NodeFragmentationWorkspace* workspace) {
  const float hami_score = cycle.tessera_nodes() ? 0.0F : NodeScore(node, {});
  NodeRank rank{0, cycle.tessera_nodes() ? fit.score : hami_score,
                node.summaries_current
                    ? node.totals.idle
                    : std::all_of(node.usage.begin(), node.usage.end(),
                                  [](const state::DeviceUsage& u) { return u.used == 0; }),
                fit.mig_planned};
  if (cycle.fragmentation_only()) {
    // One plugin: its steps are the rank (the weight's size changes no order), and the bounds
    // read them.
    rank.bucket = FragmentationSteps(cycle, node, fit, capacity, workspace);
    return rank;
  }
  // The weighted sum of the plugins' scores, highest first: its negation ranks like a bucket.
  double sum = 0;
  for (const NodeScoreTerm& term : cycle.prefs().node_policy.terms()) {
    double score = 0;
    switch (term.plugin) {
      case NodeScorePlugin::kFragmentation:
        score = -FragmentationSteps(cycle, node, fit, capacity, workspace);
        break;
      case NodeScorePlugin::kHamiNodeScore:
        score = cycle.tessera_nodes() ? NodeScore(node, {}) : hami_score;
        break;
      case NodeScorePlugin::kFullness:
        score = fit.score;
        break;
    }
    sum += term.weight * score;
  }
  rank.bucket = -sum;
  return rank;
}

}  // namespace tessera::sched
