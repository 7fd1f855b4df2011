#pragma once

// The Alibaba cluster-trace-gpu-v2023 ("openb") CSV files that the FGD paper (USENIX ATC'23,
// "Beware of Fragmentation") replays: one file of GPU nodes and one file of pods.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace tessera::sim::replay {

// Each GPU is 1000 milli-GPU; a pod's gpu_milli is its request per GPU.
inline constexpr int64_t kMilliPerGpu = 1000;

struct TraceNode {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int gpus = 0;
  std::string model;  // GPU model; empty for a CPU-only node
};

struct TracePod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int num_gpu = 0;
  int64_t gpu_milli = 0;              // per GPU, 1..1000 when num_gpu > 0, else 0
  std::vector<std::string> gpu_spec;  // accepted GPU models; empty accepts any

  int64_t TotalGpuMilli() const { return gpu_milli * num_gpu; }
};

// The four pod types the paper reports failures for.
enum class PodKind { kCpuOnly, kSharing, kOneGpu, kMultiGpu };
inline constexpr int kPodKindCount = 4;
PodKind KindOf(const TracePod& pod);
std::string_view PodKindName(PodKind kind);  // "cpu_only", "sharing", "one_gpu", "multi_gpu"

// Node file columns (found by header name): sn (or name), cpu_milli, memory_mib, gpu (or
// num_gpu), model. Errors name the file, the line and the column.
Result<std::vector<TraceNode>> LoadTraceNodes(const std::string& path);
Result<std::vector<TraceNode>> ParseTraceNodes(std::string_view text, std::string_view source);

// Pod file columns: name, cpu_milli, memory_mib, num_gpu, gpu_milli and, when present, gpu_spec
// (models separated by '|'). The multigpu* files have only the first five; other columns
// (qos, times) are ignored. A CPU-only pod's gpu_milli and gpu_spec are dropped, as the
// simulator's pod_csv_to_yaml.py writes no GPU annotation for num_gpu == 0.
Result<std::vector<TracePod>> LoadTracePods(const std::string& path);
Result<std::vector<TracePod>> ParseTracePods(std::string_view text, std::string_view source);

// Pod list paths with every folder among them replaced by its *pod_list*.csv files, sorted.
// Errors name the folder: unreadable, or holding no pod list.
Result<std::vector<std::string>> ExpandPodLists(const std::vector<std::string>& paths);

}  // namespace tessera::sim::replay
