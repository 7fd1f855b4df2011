#pragma once

#include <optional>
#include <vector>

#include "core/sched/fit.h"

namespace tessera::sched {

// topology-aware GPU choice (hami-protocol.md 5.6) from the node's pair scores, without HAMi's
// exponential enumeration: exhaustive up to kMaxTopologySubsets subsets, greedy beyond.
// One GPU: the first with the lowest total score to the others (keeps well-linked GPUs free).
// Several: the first subset with the highest sum of pairwise scores. Missing scores count 0.
inline constexpr long kMaxTopologySubsets = 20000;
std::vector<int> PickByTopology(const state::NodeState& node, const std::vector<int>& candidates,
                                int count);

}  // namespace tessera::sched
