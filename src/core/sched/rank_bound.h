#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/sched/fragmentation.h"
#include "core/sched/request.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// Fragmentation deltas are compared in steps of 4% of a GPU (FGD's integer scores have about
// this resolution near zero; measured in docs/replay.md): NodeRank::bucket's unit.
inline constexpr double kFragmentationQuantum = 0.04;

// A floor under the fragmentation bucket a node can get for one pod (NodeRank::bucket under
// tessera's ranking), read from the node's summaries without fitting the pod: the filter skips
// a node whose floor already ranks after the best node found so far (branch and bound), so
// that on a large cluster most nodes are never fitted. The choice is the same as with every
// node fitted, since a skipped node could not have been chosen.
//
// Why it holds. The pod takes memory from GPUs with room for a container's per-GPU request.
// Take a shape of the demand mix that asks one GPU, no GPU model and no more host CPU than the
// node has free. If every GPU the pod takes held it before, its fragmented capacity can only
// grow: a taken GPU stays a holder (adding nothing) or stops being one (adding its rest), and if
// the shape no longer fits at all it counts everything free, at least what it counted before.
// Every other shape's fragmented capacity falls by at most what the pod takes, as a share of
// the GPUs. So the delta is at least -(weight of the shapes that can fall) x (the pod's memory
// over the node's smallest GPU); a shape can fall only if it asks several GPUs, a model or more
// CPU than is free, or a GPU with room for the pod lacks room for it (for a pod taking one GPU:
// the one GPU where the falling weight is largest).
// For a pod taking one GPU a tighter floor (TighterLowestBucket) makes the same argument per GPU
// the pod could take, with the growth counted too. On a cluster where every node differs a
// little (the HAMi harness's d80: each node's GPU 7 holds a node-specific size) the pod adds the
// same fragmentation everywhere; the floor without the growth stayed below it on every node and
// no node was skipped (8.7 ms at 5000 nodes, docs/performance.md).
class RankBound {
 public:
  RankBound() = default;  // bounds nothing
  // For a pod ranked by fragmentation against `target` (CycleState::by_fragmentation()).
  RankBound(const PodRequest& request, const std::vector<WeightedShape>& target);

  bool enabled() const { return enabled_; }

  // The lowest bucket `node` can rank in if the pod fits it, or nullopt where this bound says
  // nothing: nodes with MIG GPUs (their plan is ranked by placeability), nodes whose summaries
  // (NodeState::gpu_summaries, totals) are not current.
  std::optional<double> LowestBucket(const state::NodeState& node) const {
    if (!enabled_ || node.any_mig || !node.summaries_current) return std::nullopt;
    return Lowest(node);
  }
  // A floor at least LowestBucket's, for a pod taking one GPU with its memory in MiB (else
  // nullopt): per GPU the pod could take, exactly how each shape the bound follows moves if it
  // lands there. It reads every GPU's summary, where LowestBucket mostly reads none: a second
  // test, for a node LowestBucket could not rule out (Outranked).
  std::optional<double> TighterLowestBucket(const state::NodeState& node) const;

 private:
  double Lowest(const state::NodeState& node) const;
  // For a pod taking one GPU with its memory in MiB: per GPU it could take, exactly how each
  // followed shape's fragmented capacity moves if it lands there (up by the GPU's rest where
  // the GPU stops holding the shape, down by the take where it never held it), the lowest of
  // them. `always`: the singles that do not fit the node's host CPU.
  double LowestForOneGpu(const state::NodeState& node, uint64_t always) const;

  struct Take {
    int32_t gpus = 0;
    int32_t mem_mib = 0;   // per GPU; 0: a share of the GPU's memory
    double mem_share = 1;  // per GPU, when mem_mib is 0: at most this share of the GPU
  };
  // A shape asking one GPU and no model: it can fall only for want of CPU or of a GPU's room.
  struct Single {
    int64_t cpu_milli;
    int32_t mem_mib;
    int32_t cores;
    double weight;
  };
  bool enabled_ = false;
  std::vector<Take> takes_;
  bool one_gpu_ = false;  // the pod takes one GPU in all
  // A GPU with less room than this cannot take any container of the pod.
  int32_t least_mem_ = 0;
  int32_t least_cores_ = 0;
  std::vector<Single> singles_;  // at most 64 (a bit mask each); the rest count as `other`
  // The singles a GPU with room for the pod may still lack room for (asking more memory or
  // cores than some container): only these make the GPUs' room worth reading.
  uint64_t uncovered_ = 0;
  double other_weight_ = 0;  // shapes that can always fall
  size_t other_shapes_ = 0;
  // The singles asking more than an amount (host CPU, a GPU's memory or cores), found without
  // a pass over the singles: `levels` are the distinct amounts asked, ascending, and
  // above[k] the singles asking more than levels[k - 1] (above[0]: every single asking any).
  struct Thresholds {
    std::vector<int64_t> levels;
    std::vector<uint64_t> above;
    uint64_t AskingMoreThan(int64_t amount) const;
  };
  Thresholds cpu_;
  Thresholds mem_;
  Thresholds cores_;
};

}  // namespace tessera::sched
