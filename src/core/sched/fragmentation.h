#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace tessera::sched {

// A kind of request, as the fragmentation measure sees it: how many GPUs, how much of each GPU,
// and how much of the host. FGD's "task type" (Weng et al., USENIX ATC'23), in HAMi's terms.
struct DemandShape {
  int32_t gpus = 0;         // 0 = a CPU-only request
  int32_t gpu_mem_mib = 0;  // per GPU
  int32_t gpu_cores = 0;    // per GPU, percent
  int64_t cpu_milli = 0;    // host CPU
  std::string gpu_type;     // accepted model substrings: comma list, upper case; "" = any
  auto Key() const { return std::tie(gpus, gpu_mem_mib, gpu_cores, cpu_milli, gpu_type); }
  bool operator<(const DemandShape& o) const { return Key() < o.Key(); }
  bool operator==(const DemandShape& o) const { return Key() == o.Key(); }
};

struct WeightedShape {
  DemandShape shape;
  double weight = 0;  // probability in the mix
};

// The mix of requests the cluster sees, learned online: every observed request adds 1 to its
// shape, and all counts decay by `decay` per observation, so the mix follows the workload. The
// most frequent shapes covering `coverage` of the mass form the target workload (FGD's M).
class DemandMix {
 public:
  explicit DemandMix(double decay = 1.0, double coverage = 0.95, size_t max_shapes = 64)
      : decay_(decay), coverage_(coverage), max_shapes_(max_shapes) {}

  void Observe(const DemandShape& shape, double weight = 1.0);
  // The current target workload; recomputed lazily when observations changed it.
  const std::vector<WeightedShape>& Target() const;
  bool empty() const { return counts_.empty(); }
  uint64_t version() const { return version_; }

 private:
  double decay_;
  double coverage_;
  size_t max_shapes_;
  double scale_ = 1.0;  // counts are stored divided by scale_, so decay is O(1)
  std::map<DemandShape, double> counts_;
  uint64_t version_ = 0;
  mutable uint64_t target_version_ = ~0ULL;
  mutable std::vector<WeightedShape> target_;
};

// What the fragmentation measure needs to know of one node.
struct NodeCapacity {
  std::vector<int32_t> gpu_free_mem;   // per GPU
  std::vector<int32_t> gpu_total_mem;  // per GPU
  std::vector<int32_t> gpu_free_cores;
  std::vector<bool> gpu_usable;           // healthy, not cordoned, not MIG, tasks left
  std::string gpu_type;                   // the node's GPU model, upper case (first usable GPU)
  std::optional<int64_t> cpu_free_milli;  // unknown host capacity = never the bottleneck
};

// Expected fragmented GPU capacity of a node for a target workload, in GPUs (each GPU's free
// memory as a fraction of its total): for each shape, the free capacity the shape cannot use —
// all of it when the shape does not fit on the node at all (GPUs, host CPU, model), otherwise
// the free capacity of the GPUs too small for it — weighted by the shape's probability.
double NodeFragmentation(const NodeCapacity& node, const std::vector<WeightedShape>& target);

}  // namespace tessera::sched
