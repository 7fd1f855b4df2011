#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace tessera::codec {

// One device entry of hami.io/vgpu-devices-allocated: "uuid,type,usedmem,usedcores".
struct ContainerDevice {
  std::string uuid;
  std::string type = "NVIDIA";
  int32_t used_mem = 0;
  int32_t used_cores = 0;
  bool operator==(const ContainerDevice&) const = default;
};
using ContainerDevices = std::vector<ContainerDevice>;
// One entry per allocation slot: init containers first, then app containers; empty slots kept.
using PodDevices = std::vector<ContainerDevices>;

// Grammar (hami-protocol.md 1.2.1): pod := (container ";")*, container := (device ":")*.
std::string EncodePodDevices(const PodDevices& devices);
Result<PodDevices> DecodePodDevices(std::string_view text);

// Every GPU UUID ("GPU-...") named anywhere in an annotation's text, even one that does not
// decode: the GPUs a pod holds although its annotation cannot be read exactly. Sorted, unique.
std::vector<std::string> GpuUuidsIn(std::string_view text);

}  // namespace tessera::codec
