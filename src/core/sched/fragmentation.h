#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
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
  // Copies rebuild their ranking (it refers into counts_).
  DemandMix(const DemandMix& other) { *this = other; }
  DemandMix& operator=(const DemandMix& other);

  void Observe(const DemandShape& shape, double weight = 1.0);
  // The current target workload; recomputed lazily when observations changed it.
  const std::vector<WeightedShape>& Target() const;
  bool empty() const { return counts_.empty(); }
  uint64_t version() const { return version_; }

 private:
  double decay_;
  double coverage_;
  size_t max_shapes_;
  using Counts = std::map<DemandShape, double>;
  // Count order: highest count first, equal counts in shape order.
  static bool RanksBefore(Counts::const_iterator a, Counts::const_iterator b) {
    return a->second > b->second || (a->second == b->second && a->first < b->first);
  }

  double scale_ = 1.0;  // counts are stored divided by scale_, so decay is O(1)
  Counts counts_;
  // counts_ in count order, kept as observations come (one entry moves per observation) so
  // that Target() does not sort; rebuilt when invalid (after a renormalisation or a copy).
  mutable std::vector<Counts::const_iterator> ranked_;
  mutable bool ranked_valid_ = true;
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

// What a placement takes from one GPU (free memory and cores go down, not below 0).
struct GpuTake {
  int32_t gpu = 0;  // index into the node's GPUs
  int32_t mem_mib = 0;
  int32_t cores = 0;
};

// A target workload prepared for many NodeFragmentation calls (one scheduling decision): the
// shapes in a compact form, and shapes that ask the same of each GPU (memory and cores) or name
// the same GPU models share the work on a node. It refers to `shapes`, which must outlive it and
// stay unchanged.
class PreparedTarget {
 public:
  explicit PreparedTarget(const std::vector<WeightedShape>& shapes);
  const std::vector<WeightedShape>& shapes() const { return *shapes_; }

 private:
  friend double NodeFragmentationAfter(const NodeCapacity& node, const PreparedTarget& target,
                                       std::span<const GpuTake> takes, int64_t cpu_milli);
  friend class NodeFragmentationWorkspace;
  struct Shape {
    double weight;
    int64_t cpu_milli;
    int32_t gpus;
    int32_t demand;  // index into demands_
    int32_t type;    // index into types_; -1: any model
  };
  const std::vector<WeightedShape>* shapes_;
  std::vector<Shape> compact_;                        // in the order of `shapes`
  std::vector<std::pair<int32_t, int32_t>> demands_;  // distinct (memory, cores) per GPU
  std::vector<std::string> types_;                    // distinct model lists
};

class NodeFragmentationWorkspace;

// Expected fragmented GPU capacity of a node for a target workload, in GPUs (each GPU's free
// memory as a fraction of its total): for each shape, the free capacity the shape cannot use —
// all of it when the shape does not fit on the node at all (GPUs, host CPU, model), otherwise
// the free capacity of the GPUs too small for it — weighted by the shape's probability.
double NodeFragmentation(const NodeCapacity& node, const PreparedTarget& target);

// The node's fragmentation after `takes` (applied in order) and `cpu_milli` of host CPU:
// bit-identical to NodeFragmentation of a copy of `node` with them applied, without the copy.
double NodeFragmentationAfter(const NodeCapacity& node, const PreparedTarget& target,
                              std::span<const GpuTake> takes, int64_t cpu_milli);

// The same for a target used once (prepares it first); both give bit-identical results.
double NodeFragmentation(const NodeCapacity& node, const std::vector<WeightedShape>& target);

// NodeFragmentation and NodeFragmentationAfter of one take, for one node asked many times (the
// fragmentation-aware GPU choice asks once per GPU, the node's rank twice more). What does not
// depend on the take is worked out once per node: the usable GPUs, and per per-GPU demand which
// GPUs hold it and the running sums of the free capacity of those that do not. A take then only
// redoes the sums from its GPU on. Bit-identical to the functions above: the same additions in
// the same order. Reset for each node; the buffers are kept from node to node.
class NodeFragmentationWorkspace {
 public:
  // `node` and `target` must stay unchanged until the next Reset.
  void Reset(const NodeCapacity& node, const PreparedTarget& target);
  // NodeFragmentation(node, target).
  double Before();
  // NodeFragmentationAfter(node, target, {&take, 1}, cpu_milli).
  double After(const GpuTake& take, int64_t cpu_milli);

 private:
  // Per distinct per-GPU demand, worked out when first needed: which usable GPUs hold it, and
  // sums[i] = the free capacity of the first i usable GPUs that do not, summed in order.
  struct Demand {
    bool known = false;
    int holders = 0;
    uint64_t holds = 0;  // bit i: usable GPU i holds the demand
  };
  const Demand& DemandAt(int32_t d);
  double ShapesSum(double total_free, int64_t cpu_free, int position, int32_t mem, int32_t cores,
                   double fraction);

  const NodeCapacity* node_ = nullptr;
  const PreparedTarget* target_ = nullptr;
  std::vector<int32_t> position_;  // per GPU: its index among the usable GPUs; -1: not usable
  std::vector<int32_t> free_mem_;  // per usable GPU
  std::vector<int32_t> free_cores_;
  std::vector<double> fraction_;
  std::vector<double> total_sums_;  // [i]: fraction_[0..i) summed in order (GPUs with memory)
  std::vector<bool> has_memory_;    // per usable GPU: its total memory is positive
  std::vector<Demand> demands_;
  std::vector<double> demand_sums_;  // demands x (usable + 1): Demand's sums
  std::vector<int8_t> type_match_;   // per model list of the target: -1 unknown, 0, 1
  size_t usable_ = 0;
};

}  // namespace tessera::sched
