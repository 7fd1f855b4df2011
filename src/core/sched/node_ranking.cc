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

}  // namespace

NodeRank RankNode(const CycleState& cycle, const state::NodeState& node, const NodeFit& fit,
                  const NodeCapacity& capacity, NodeFragmentationWorkspace* workspace) {
  NodeRank rank{0, cycle.tessera_nodes() ? fit.score : NodeScore(node, {}),
                node.summaries_current
                    ? node.totals.idle
                    : std::all_of(node.usage.begin(), node.usage.end(),
                                  [](const state::DeviceUsage& u) { return u.used == 0; }),
                fit.mig_planned};
  if (!cycle.tessera_nodes()) return rank;
  if (fit.fits && fit.mig_planned) {
    rank.bucket = std::round(fit.mig_drop / kPlaceabilityQuantum);
  } else if (fit.fits && cycle.by_fragmentation()) {
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
    rank.bucket = std::floor((after - before) / kFragmentationQuantum);
  }
  return rank;
}

}  // namespace tessera::sched
