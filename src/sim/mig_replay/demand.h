#pragma once

// What the benchmark asks for (docs/mig-replay.md, "Workloads"). A request is a count of
// instances and either a compute share of one GPU or an amount of memory. A share is kept as a
// fraction so that one request means the same thing on every model of a fleet of 7-slice GPUs:
// on a model with S compute slices it needs c = ceil(share * S) slices and maps to the smallest
// profile with at least c. A memory request (what users of nvidia.com/gpumem write) maps to the
// smallest profile with at least that memory on every model, so it also spans fleets that mix
// 7-slice and 4-slice GPUs (the RTX PRO 6000).

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/mig/layout.h"
#include "sim/replay/trace.h"

namespace tessera::sim::mig_replay {

struct RequestType {
  int32_t share_num = 1;  // compute share of one GPU: share_num / share_den, in (0, 1]
  int32_t share_den = 7;
  int32_t count = 1;       // instances, on one node (a multi-GPU pod asks for whole GPUs)
  std::string label;       // "3/7", "milli 300", "7/7 x4", "19000MiB x2"
  int32_t memory_mib = 0;  // > 0: the request names memory per instance and the share is unused
  bool operator==(const RequestType&) const = default;
};

// ceil(share * compute_slices), at least 1.
uint32_t ComputeSlicesNeeded(const RequestType& type, uint32_t compute_slices);
// The intended profile of `type` on a GPU: for a share, the allowed profile with the fewest
// compute slices (then the least memory) that has at least ComputeSlicesNeeded; for memory, the
// allowed profile with the least memory (then the fewest compute slices) that has at least
// memory_mib, as the scheduler orders eligible profiles; -1 when none.
int IntendedProfile(const mig::GpuMigModel& gpu, const RequestType& type);

// The request types of a workload and how often each occurs.
struct Workload {
  std::string name;
  std::vector<RequestType> types;
  std::vector<double> probabilities;  // per type, summing to 1
};

enum class SyntheticMix { kUniform, kSmallHeavy, kLargeHeavy };
inline constexpr std::string_view kWorkloadUniform = "uniform";
inline constexpr std::string_view kWorkloadSmallHeavy = "small-heavy";
inline constexpr std::string_view kWorkloadLargeHeavy = "large-heavy";
inline constexpr std::string_view kWorkloadOpenb = "openb";
inline constexpr std::string_view kWorkloadMemoryMix = "memory-mix";
inline constexpr std::string_view kWorkloadMultiSmall = "multi-small";
inline constexpr std::string_view kWorkloadMultiMixed = "multi-mixed";
inline constexpr std::string_view kWorkloadMultiMemory = "multi-memory";

// Profile sizes 1g, 2g, 3g, 4g, 7g (shares 1/7 ... 7/7) with the mix's probabilities.
Workload MakeSyntheticWorkload(SyntheticMix mix);
// Memory requests of about 4 GB, 19 GB and 40 GB per instance, one or two instances, mostly
// small (issue 12's mixed-fleet workload).
Workload MakeMemoryMixWorkload();
// Pods asking several MIG instances on one node, which may share a GPU, mixed with one-instance
// pods (docs/mig-replay.md, "Workloads"). Shares run where all models have the same compute
// slices, like the synthetic mixes; multi-memory runs on every fleet.
// multi-small: half the pods ask 2, 3 or 4 instances of share 1/7 (1g), the other half one
// instance of share 1/7, 2/7, 3/7, 4/7 or 7/7.
Workload MakeMultiSmallWorkload();
// multi-mixed: half the pods ask several instances of mixed sizes (1/7 x2..x4, 2/7 x2, 2/7 x3,
// 3/7 x2, 4/7 x2), the other half one instance of every size, as in multi-small.
Workload MakeMultiMixedWorkload();
// multi-memory: half the pods ask 2, 3 or 4 instances of 4000 MiB (a 1g on every model, the
// RTX PRO 6000's 1g.24gb included), the other half one instance of 4000, 19000 or 40000 MiB.
Workload MakeMultiMemoryWorkload();
// Whether every request type names memory (such a workload runs on any fleet; a share-based one
// only where all models have the same compute slices).
bool NamesMemory(const Workload& workload);
// The openb pod list mapped to MIG requests: a sharing pod (gpu_milli < 1000) asks for one
// instance of share gpu_milli/1000; a whole-GPU pod for num_gpu instances of share 1; CPU-only
// pods are dropped. Types are the distinct (share, count) pairs weighted by their pod counts.
Result<Workload> MakeOpenbWorkload(const std::vector<replay::TracePod>& pods);

// One request of a replay.
struct Arrival {
  int type = 0;         // index into Workload::types
  double time = 0;      // arrival time (steady state), in mean lifetimes
  double lifetime = 0;  // steady state only
};

// `n` requests drawn independently from the workload's probabilities (arrivals only).
std::vector<Arrival> SampleArrivals(const Workload& workload, size_t n, std::mt19937_64& rng);
// `n` requests of a Poisson process with `rate` per mean lifetime, exponential lifetimes of mean 1.
std::vector<Arrival> SamplePoissonArrivals(const Workload& workload, size_t n, double rate,
                                           std::mt19937_64& rng);

}  // namespace tessera::sim::mig_replay
