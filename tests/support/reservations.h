#pragma once

// Reservations for tests of the cluster state: what a running pod holds.

#include <cstdint>
#include <optional>
#include <string>

#include "core/state/cluster_state.h"

namespace tessera::testing {

// Pod `key` (uid "u") holding `mem` MiB and `cores` % of shared GPU `uuid` on `node`.
inline state::PodReservation SharedGpuPod(const std::string& key, const std::string& node,
                                          const std::string& uuid, int mem, int cores) {
  return state::PodReservation{key, "u", node, 0, {{{uuid, "NVIDIA", mem, cores}}}, {}};
}

// Pod `key` (uid "uid-<key>") holding one 1g.24gb instance of the RTX PRO 6000 `uuid` on `node`
// at memory slice `start`.
inline state::PodReservation RtxPro1g24gbPod(const std::string& key, const std::string& node,
                                             const std::string& uuid, uint32_t start) {
  state::PodReservation r;
  r.key = key;
  r.uid = "uid-" + key;
  r.node = node;
  r.devices = {{{uuid, "NVIDIA", 24192, 25}}};
  r.mig = {{0, 0, uuid, "1g.24gb", {start, 3}, std::nullopt}};
  return r;
}

}  // namespace tessera::testing
