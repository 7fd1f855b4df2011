#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/model/device.h"

namespace tessera::codec {

// What the node agent records after it created the instance.
struct MigRuntimeIdentity {
  std::string mig_uuid;
  uint32_t gpu_instance_id = 0;
  uint32_t compute_instance_id = 0;
  bool operator==(const MigRuntimeIdentity&) const = default;
};

// One element of hami.io/vgpu-mig-allocations (hami-protocol.md 1.2.2).
struct MigAllocation {
  int container_index = 0;  // allocation slot (init containers first)
  int device_index = 0;     // position inside that slot's device list
  std::string gpu_uuid;
  std::string profile;
  model::Placement placement;
  std::optional<MigRuntimeIdentity> runtime;
  bool operator==(const MigAllocation&) const = default;
};

// "" when there is nothing to write (the annotation is then omitted).
std::string EncodeMigAllocations(const std::vector<MigAllocation>& allocations);
// "" decodes to no allocations. Validation: indices >= 0, non-empty gpuUUID and profile,
// placement.size != 0, runtime fields all-or-none, no duplicate (containerIndex, deviceIndex).
Result<std::vector<MigAllocation>> DecodeMigAllocations(std::string_view text);

}  // namespace tessera::codec
