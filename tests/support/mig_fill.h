#pragma once

// Random MIG occupancy for property tests.

#include <random>
#include <string>

#include "core/state/cluster_state.h"

namespace tessera::testing {

// Random legal instances on each GPU, held by one running pod per node.
inline void FillMigRandomly(state::ClusterState* cluster, const std::string& name,
                            std::mt19937* rng) {
  const state::NodeState* node = cluster->node(name);
  state::PodReservation running{"default/run-" + name, "u-" + name, name, 0, {{}}, {}};
  for (size_t g = 0; g < node->devices.size(); ++g) {
    if (!node->devices[g].IsMig()) continue;
    const auto& model = node->mig_models[g];
    mig::Layout layout;
    const int want = std::uniform_int_distribution<int>(0, 4)(*rng);
    for (int k = 0, placed = 0; k < want * 3 && placed < want; ++k) {
      const int p = std::uniform_int_distribution<int>(0, model.profiles().size() - 1)(*rng);
      const auto& pls = model.profiles()[p].placements;
      const auto& pl = pls[std::uniform_int_distribution<size_t>(0, pls.size() - 1)(*rng)];
      if (!model.CanPlace(layout, p, pl)) continue;
      model.Place(layout, p, pl);
      ++placed;
      running.devices[0].push_back(codec::ContainerDevice{node->devices[g].uuid, "NVIDIA",
                                                          model.profiles()[p].memory_mib,
                                                          model.profiles()[p].core});
      running.mig.push_back(codec::MigAllocation{0, static_cast<int>(running.devices[0].size() - 1),
                                                 node->devices[g].uuid, model.profiles()[p].name,
                                                 pl, std::nullopt});
    }
  }
  if (!running.mig.empty()) cluster->AddPod(running);
}

}  // namespace tessera::testing
