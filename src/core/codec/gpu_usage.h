#pragma once

// tessera's node annotation tessera.io/gpu-usage: what NVML measured on the node's GPUs and MIG
// instances when the agent last read them (utilisation, memory used), for the scheduler's web
// view. The agent writes it in the same patch as hami.io/node-nvidia-register (docs/agent.md,
// "GPU usage"); scheduling never reads it, and HAMi ignores the key.
//
// Compact text, so that a 5 000-node watch stays small:
//   <unix seconds>;<gpu>;<gpu>...
//   gpu = <GPU UUID>=<util %>,<used MiB>[|<MIG start>:<util %>,<used MiB>]...
// e.g. "1765000000;GPU-a80=37,12000;GPU-mig=-,20000|0:-,8000|4:-,-". `-` is a value NVML did not
// report (utilisation is usually not supported on MIG devices): unknown, never 0. A MIG instance
// is named by the start of its placement (memory slices), as the scheduler's state names it.
// Sizes are bounded so that a corrupt value cannot cost memory.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace tessera::codec {

// One GPU's or MIG instance's measurement; nullopt: not reported.
struct UsageValue {
  std::optional<uint32_t> utilization_percent;  // 0..100
  std::optional<uint64_t> memory_used_mib;
  bool operator==(const UsageValue&) const = default;
};

struct MigInstanceUsage {
  uint32_t start = 0;  // the instance's placement start (memory slices)
  UsageValue usage;
  bool operator==(const MigInstanceUsage&) const = default;
};

struct GpuUsage {
  std::string uuid;
  UsageValue usage;
  std::vector<MigInstanceUsage> mig;  // in MIG mode: its instances
  bool operator==(const GpuUsage&) const = default;
};

struct NodeGpuUsage {
  int64_t time_s = 0;  // when the agent read it (Unix seconds)
  std::vector<GpuUsage> gpus;
  bool operator==(const NodeGpuUsage&) const = default;
};

inline constexpr size_t kMaxUsageGpus = 64;
inline constexpr size_t kMaxUsageMigInstances = 16;  // per GPU (NVML has at most 7)
inline constexpr size_t kMaxUsageUuidLength = 128;
inline constexpr size_t kMaxGpuUsageAnnotationBytes = size_t{16} * 1024;

std::string EncodeGpuUsage(const NodeGpuUsage& usage);
// Rejects anything malformed as a whole (the caller ignores the value and logs why).
Result<NodeGpuUsage> DecodeGpuUsage(std::string_view text);
// The same measurements, whenever they were read.
bool SameMeasurements(const NodeGpuUsage& a, const NodeGpuUsage& b);

}  // namespace tessera::codec
