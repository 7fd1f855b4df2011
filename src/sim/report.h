#pragma once

#include <string>

#include "core/state/cluster_state.h"
#include "sim/simulator.h"

namespace tessera::sim {

// JSON Lines (docs/simulator.md): one object per step result, then one final object.
std::string StepJson(const StepResult& result);
std::string FinalJson(const state::ClusterState& state);

// For people: the decision, the reasons, and a map of every GPU.
std::string StepText(const StepResult& result);
std::string ClusterText(const state::ClusterState& state);

}  // namespace tessera::sim
