#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/config/scheduler_config.h"
#include "core/model/pod.h"

namespace tessera::sched {

inline constexpr int32_t kMemPercentUnset = 101;  // HAMi's sentinel

// What one container asks of NVIDIA GPUs (hami-protocol.md section 2).
struct ContainerRequest {
  int32_t nums = 0;                        // number of GPUs (or MIG instances)
  int32_t mem_mib = 0;                     // per device; 0 = use mem_percent
  int32_t mem_percent = kMemPercentUnset;  // per device, of the device's memory
  int32_t cores = 0;                       // per device, percent of the GPU's compute
  bool Empty() const { return nums == 0; }
  bool operator==(const ContainerRequest&) const = default;
};

// One request per allocation slot: init containers first, then app containers.
struct PodRequest {
  int num_init = 0;
  std::vector<std::string> names;
  std::vector<ContainerRequest> slots;
  bool HasGpu() const;
  bool IsInit(size_t slot) const { return static_cast<int>(slot) < num_init; }
};

// Derives the request from limits, then requests, with the config defaults. Unlike HAMi, a value
// that cannot be used (a fraction, a negative, "16Gi" of MiB, a percentage above 100) is an
// error naming the container, the resource and the value; it never means "no GPU".
Result<ContainerRequest> DeriveContainerRequest(const model::Container& container,
                                                const config::NvidiaConfig& config);
Result<PodRequest> DerivePodRequest(const model::Pod& pod, const config::NvidiaConfig& config);

}  // namespace tessera::sched
