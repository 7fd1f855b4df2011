#pragma once

// Where MIG devices must be described before a container can be given them: with a CDI
// device-list strategy, a CDI spec that names each MIG UUID (agent_runtime writes it from the
// MIG ledger). The allocator asks before it answers the kubelet, so a container never gets a
// CDI name the runtime cannot resolve.

#include <string>
#include <vector>

#include "core/common/result.h"

namespace tessera::agent {

class MigDeviceExport {
 public:
  virtual ~MigDeviceExport() = default;
  // Brings the description up to date with the instances tessera holds; an error when one of
  // `mig_uuids` is not described afterwards (the message names it and why).
  virtual Status Export(const std::vector<std::string>& mig_uuids) = 0;
};

}  // namespace tessera::agent
