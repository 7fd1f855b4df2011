#pragma once

// The GPU fleets of the MIG benchmark (docs/mig-replay.md): clusters of one GPU model, and two
// mixed fleets. Nodes are built as the simulator's shorthand MIG nodes (sim/scenario.h), every GPU
// in MIG mode with the benchmark's profile set.

#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/mig/catalog.h"
#include "core/model/pod.h"

namespace tessera::sim::mig_replay {

struct FleetSpec {
  std::string name;                 // "a100-40gb", "mixed", "mixed-rtx"
  std::vector<std::string> models;  // catalog model ids; nodes cycle through them in this order
  int gpus_per_node = 8;
};

// Every fleet the benchmark knows, in report order.
const std::vector<FleetSpec>& AllFleets();
const FleetSpec* FindFleet(std::string_view name);

// The profiles a benchmark GPU offers: for each compute-slice count ("Ng") the plain profile
// (no +me/-me/+gfx suffix) with the least memory. Extra variants such as A100's 1g.10gb would
// make "the smallest profile with c compute slices" ambiguous and are left out for every policy.
Result<std::vector<std::string>> BenchProfiles(const mig::GpuModelSpec& spec);

// `nodes` nodes named n000, n001, ... (name order = fleet order), node i of model
// spec.models[i % models]; each GPU in MIG mode with BenchProfiles.
Result<std::vector<model::Node>> BuildFleetNodes(const FleetSpec& spec, int nodes,
                                                 const mig::GpuModelCatalog& catalog);

}  // namespace tessera::sim::mig_replay
