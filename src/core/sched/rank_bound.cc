#include "core/sched/rank_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::sched {

RankBound::RankBound(const PodRequest& request, const std::vector<WeightedShape>& target) {
  int32_t least_mem = std::numeric_limits<int32_t>::max();
  int32_t least_cores = std::numeric_limits<int32_t>::max();
  int32_t gpus = 0;
  for (const ContainerRequest& k : request.slots) {
    if (k.Empty()) continue;
    Take take{k.nums, k.mem_mib, 1.0};
    if (k.mem_mib <= 0) {
      take.mem_mib = 0;
      take.mem_share = std::min(1.0, std::max(0, k.mem_percent) / 100.0);
    }
    takes_.push_back(take);
    gpus += k.nums;
    // A share of each GPU's memory promises no room: 0.
    least_mem = std::min(least_mem, std::max(0, k.mem_mib));
    least_cores = std::min(least_cores, std::max(0, k.cores));
  }
  if (takes_.empty() || target.empty()) return;
  one_gpu_ = gpus == 1;
  least_mem_ = least_mem;
  least_cores_ = least_cores;
  constexpr size_t kMaskBits = 64;
  for (const WeightedShape& w : target) {
    const DemandShape& s = w.shape;
    if (s.gpus == 1 && s.gpu_type.empty() && singles_.size() < kMaskBits) {
      if (s.gpu_mem_mib > least_mem || s.gpu_cores > least_cores) {
        uncovered_ |= uint64_t{1} << singles_.size();
      }
      singles_.push_back(Single{s.cpu_milli, s.gpu_mem_mib, s.gpu_cores, w.weight});
    } else {
      other_weight_ += w.weight;
      ++other_shapes_;
    }
  }
  enabled_ = true;
}

double RankBound::Lowest(const state::NodeState& node) const {
  const int64_t cpu_free = node.cpu_allocatable_milli
                               ? *node.cpu_allocatable_milli - node.cpu_used_milli
                               : std::numeric_limits<int64_t>::max();
  // Shapes that can fall on this node whatever the pod takes: bit i for singles_[i].
  uint64_t always = 0;
  for (size_t i = 0; i < singles_.size(); ++i) {
    if (singles_[i].cpu_milli > cpu_free) always |= uint64_t{1} << i;
  }
  // Per GPU with room for some container of the pod: the singles it lacks room for. For a pod
  // taking one GPU, the shapes of the worst such GPU can fall; for more, those of any of them.
  uint64_t lacking_any = 0;
  double worst = 0;
  const uint64_t may_lack = uncovered_ & ~always;
  // (No GPU of the node is in MIG mode: LowestBucket asks only then.)
  for (const state::GpuSummary& room : node.gpu_summaries) {
    if (may_lack == 0) break;  // every GPU that can take the pod has room for the rest
    if (room.free_mem < least_mem_ || room.free_cores < least_cores_) continue;
    uint64_t lacking = 0;
    double weight = 0;
    for (size_t i = 0; i < singles_.size(); ++i) {
      const Single& s = singles_[i];
      if (((may_lack >> i) & 1U) != 0 && (room.free_mem < s.mem_mib || room.free_cores < s.cores)) {
        lacking |= uint64_t{1} << i;
        weight += s.weight;
      }
    }
    lacking_any |= lacking;
    worst = std::max(worst, weight);
  }
  // Nothing can fall: the fragmentation can only grow. Exactly, also in floating point: each of
  // the sums NodeFragmentationAfter adds is, term by term, at least the one before the pod,
  // and rounding is monotone.
  if (other_shapes_ == 0 && always == 0 && lacking_any == 0) return 0;
  double falling = other_weight_;
  for (size_t i = 0; i < singles_.size(); ++i) {
    if ((always >> i) & 1U) falling += singles_[i].weight;
  }
  if (one_gpu_) {
    falling += worst;
  } else {
    for (size_t i = 0; i < singles_.size(); ++i) {
      if ((lacking_any >> i) & 1U) falling += singles_[i].weight;
    }
  }
  // The most of the GPUs' memory (as shares of each) the pod can take from the GPUs the measure
  // counts: its requests over the smallest of them.
  const int64_t smallest = node.totals.smallest_shared_mem;
  double taken = 0;
  for (const Take& take : takes_) {
    const double share =
        smallest <= 0 ? 0.0
        : take.mem_mib > 0
            ? std::min(1.0, static_cast<double>(take.mem_mib) / static_cast<double>(smallest))
            : take.mem_share;
    taken += take.gpus * share;
  }
  // A margin far above the rounding of the measure's sums (about 1e-13 of a GPU), far below a
  // bucket.
  constexpr double kMargin = 1e-6;
  return std::floor(-(falling * taken) / kFragmentationQuantum - kMargin);
}

}  // namespace tessera::sched
