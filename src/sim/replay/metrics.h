#pragma once

// The FGD paper's measures, ported from the authors' simulator:
//  - the target workload M ("typical pods": GetTypicalPods in pkg/utils/frag.go);
//  - node fragmentation F_n(M) (NodeGpuShareFragAmount + FragAmountSumExceptQ3, frag.go);
//  - the per-run series against arrived load, sampled as experiments/analysis/
//    merge_{alloc,frag,frag_ratio}_discrete*.py do from the per-pod "[Alloc]"/"[Report]" logs.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/replay/cluster.h"
#include "sim/replay/trace.h"

namespace tessera::sim::replay {

// A pod "shape" (simontype.PodResource): memory is not part of it.
struct PodShape {
  int64_t cpu_milli = 0;
  int64_t gpu_milli = 0;  // per GPU; 0 for CPU-only
  int num_gpu = 0;
  std::string gpu_type;             // accepted models joined by '|' ("" = any)
  std::vector<std::string> models;  // the same, split

  bool operator==(const PodShape& other) const {
    return cpu_milli == other.cpu_milli && gpu_milli == other.gpu_milli &&
           num_gpu == other.num_gpu && gpu_type == other.gpu_type;
  }
};
PodShape ShapeOf(const TracePod& pod);

struct TargetShape {
  PodShape shape;
  int64_t count = 0;         // pods of this shape in the original trace
  double probability = 0.0;  // p_m, renormalised over the kept shapes
};

// M: the most frequent shapes of the ORIGINAL trace (before inflation), CPU-only pods
// included, kept until they cover popularity_pct % of the pods, then renormalised.
struct TargetWorkload {
  std::vector<TargetShape> shapes;  // most frequent first
  int64_t pods = 0;                 // pods counted
  size_t distinct_shapes = 0;       // shapes in the trace before the cut
  // Every shape of the trace, in the same order, with probability count / pods: the trace's
  // whole distribution, which a learner that makes its own cut (tessera's demand mix) is given
  // so that it does not cut twice.
  std::vector<TargetShape> distribution;
};
TargetWorkload BuildTargetWorkload(const std::vector<TracePod>& original_pods,
                                   int popularity_pct = 95);

// GetNodePodFrag's cases for one (node, shape) pair.
enum class FragCase {
  kQ1LackBoth,   // GPUs and CPU both insufficient
  kQ2LackGpu,    // CPU fits, GPUs do not
  kQ3Satisfied,  // the shape fits: only GPUs with free < its per-GPU request are fragment
  kQ4LackCpu,    // GPUs fit, CPU does not
  kXlSatisfied,  // CPU-only shape, CPU fits (its GPUs can never be used by it: all fragment)
  kXrLackCpu,    // CPU-only shape, CPU does not fit
  kNoAccess,     // the shape does not accept this node's GPU model
};

// F_n(m) of one shape on a node given by its free CPU, GPU model ("" = none) and free milli
// per GPU: the node's idle GPU milli, except in case Q3 where it is the sum over GPUs whose free
// milli is below the shape's per-GPU request. Memory plays no part, as in frag.go.
FragCase ClassifyFrag(const PodShape& shape, int64_t cpu_free, const std::string& node_model,
                      std::span<const int32_t> gpu_free);
double ShapeFrag(const PodShape& shape, int64_t cpu_free, const std::string& node_model,
                 std::span<const int32_t> gpu_free);

// F_n(M) = sum_m p_m F_n(m), with the shapes' model constraints resolved against a cluster's
// model table once so that one evaluation is a few hundred integer operations.
class FragCalculator {
 public:
  FragCalculator(const TargetWorkload& target, const std::vector<std::string>& model_names);

  // model_id indexes model_names (-1: node without GPUs).
  double NodeFrag(int64_t cpu_free, int model_id, std::span<const int32_t> gpu_free) const;
  double NodeFrag(const ReplayCluster& cluster, int node) const {
    return NodeFrag(cluster.CpuFree(node), cluster.ModelId(node), cluster.GpuFree(node));
  }
  // Sum of p_m: the factor by which the simulator's "idle GPU milli" (the sum of all seven
  // fragment categories) differs from the true idle milli. 1 up to rounding.
  double probability_sum() const { return probability_sum_; }

 private:
  struct Shape {
    int64_t cpu_milli;
    int64_t gpu_milli;
    int num_gpu;
    double probability;
    bool any_model;
    std::vector<char> accepts_model;  // by model id
  };
  std::vector<Shape> shapes_;
  double probability_sum_ = 0.0;
};

// The highest arrived-load percentage the series are reported at (the paper's x-axis).
inline constexpr int kMaxArrivedPct = 130;

// One run's curves, indexed by arrived load in whole percent (0..130 at least); NaN where the
// run has no sample, as the published CSVs leave such cells empty.
struct RunSeries {
  std::vector<double> gpu_alloc_pct;    // allocated GPU milli / capacity
  std::vector<double> frag_amount_pct;  // F = sum_n F_n(M) / capacity
  std::vector<double> frag_ratio_pct;   // F / idle GPU milli
};

// Collects one sample after every pod and turns them into RunSeries exactly as the authors'
// analysis scripts do: a sample's arrived load is rounded to a whole percent (half to even);
// the value at x is the mean of the samples rounded to x, or of those within x +- 1 when there
// are none. The allocation ratio is rounded to 2 decimals per sample and per point, and the
// fragmentation amount per point, as there.
class SeriesRecorder {
 public:
  explicit SeriesRecorder(int total_gpus);
  void Record(int64_t arrived_gpu_milli, int64_t allocated_gpu_milli, double frag_gpu_milli,
              double idle_gpu_milli);
  RunSeries Finish() const;

 private:
  struct Bucket {
    int samples = 0;
    double alloc_sum = 0;
    double frag_sum = 0;
    double ratio_sum = 0;
  };
  int total_gpus_;
  std::vector<Bucket> buckets_;
};

}  // namespace tessera::sim::replay
