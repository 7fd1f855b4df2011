#pragma once

#include <cstddef>
#include <vector>

#include "core/state/cluster_state.h"

namespace tessera::state {

// Per GPU of `node`, the pods holding it (a share, MIG instances, or all of it when their
// annotation is unreadable), as positions in node.pods (key order). With `shared_only`, MIG GPUs
// get no list (their instances name their pods) and nodes without a shared GPU cost nothing.
std::vector<std::vector<size_t>> PodsHoldingEachGpu(const ClusterState& state,
                                                    const NodeState& node,
                                                    bool shared_only = false);

}  // namespace tessera::state
