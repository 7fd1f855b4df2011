#pragma once

#include <map>
#include <string>

#include "core/state/cluster_state.h"

namespace tessera::service {

// The /ui page's view of the cluster, as compact JSON (docs/ui.md): strings that repeat (pod
// names, GPU types) are tables referenced by index, GPUs are arrays.
//   {"types":[...], "pods":[...],
//    "nodes":[{"name":..., "reason":..., "gpus":[[index, uuid, type#, mode, used, count,
//              usedMiB, totalMiB, usedCores, totalCores, slices, [[pod#, profile, start, size]],
//              [pod#...]], ...]}],
//    "waiting":[[pod, message], ...]}
// `waiting`: pods the last filter placed nowhere, with its message.
std::string EncodeUiState(const state::ClusterState& state,
                          const std::map<std::string, std::string>& waiting);

}  // namespace tessera::service
