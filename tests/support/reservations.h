#pragma once

// Reservations for tests of the cluster state: what a running pod holds.

#include <string>

#include "core/state/cluster_state.h"

namespace tessera::testing {

// Pod `key` (uid "u") holding `mem` MiB and `cores` % of shared GPU `uuid` on `node`.
inline state::PodReservation SharedGpuPod(const std::string& key, const std::string& node,
                                          const std::string& uuid, int mem, int cores) {
  return state::PodReservation{key, "u", node, 0, {{{uuid, "NVIDIA", mem, cores}}}, {}};
}

}  // namespace tessera::testing
