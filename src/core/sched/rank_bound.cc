#include "core/sched/rank_bound.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace tessera::sched {
namespace {

// The sum of the weights of the singles in `mask`, in index order (as a pass over them adds).
template <typename Singles>
double WeightOf(const Singles& singles, uint64_t mask) {
  double weight = 0;
  for (; mask != 0; mask &= mask - 1) weight += singles[std::countr_zero(mask)].weight;
  return weight;
}

}  // namespace

uint64_t RankBound::Thresholds::AskingMoreThan(int64_t amount) const {
  const auto first_above = std::upper_bound(levels.begin(), levels.end(), amount);
  return above[static_cast<size_t>(first_above - levels.begin())];
}

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
  const auto thresholds = [&](auto amount) {
    Thresholds t;
    for (const Single& s : singles_) t.levels.push_back(amount(s));
    std::sort(t.levels.begin(), t.levels.end());
    t.levels.erase(std::unique(t.levels.begin(), t.levels.end()), t.levels.end());
    t.above.assign(t.levels.size() + 1, 0);
    for (size_t i = 0; i < singles_.size(); ++i) {
      const auto at = std::lower_bound(t.levels.begin(), t.levels.end(), amount(singles_[i]));
      for (size_t k = 0; k <= static_cast<size_t>(at - t.levels.begin()); ++k) {
        t.above[k] |= uint64_t{1} << i;
      }
    }
    return t;
  };
  cpu_ = thresholds([](const Single& s) { return s.cpu_milli; });
  mem_ = thresholds([](const Single& s) { return int64_t{s.mem_mib}; });
  cores_ = thresholds([](const Single& s) { return int64_t{s.cores}; });
  enabled_ = true;
}

double RankBound::Lowest(const state::NodeState& node) const {
  const int64_t cpu_free = node.cpu_allocatable_milli
                               ? *node.cpu_allocatable_milli - node.cpu_used_milli
                               : std::numeric_limits<int64_t>::max();
  // Shapes that can fall on this node whatever the pod takes: bit i for singles_[i].
  const uint64_t always = cpu_.AskingMoreThan(cpu_free);
  // Per GPU with room for some container of the pod: the singles it lacks room for. For a pod
  // taking one GPU, the shapes of the worst such GPU can fall; for more, those of any of them.
  uint64_t lacking_any = 0;
  double worst = 0;
  const uint64_t may_lack = uncovered_ & ~always;
  // (No GPU of the node is in MIG mode: LowestBucket asks only then.)
  for (const state::GpuSummary& room : node.gpu_summaries) {
    if (may_lack == 0) break;  // every GPU that can take the pod has room for the rest
    if (room.free_mem < least_mem_ || room.free_cores < least_cores_) continue;
    const uint64_t lacking =
        (mem_.AskingMoreThan(room.free_mem) | cores_.AskingMoreThan(room.free_cores)) & may_lack;
    if (one_gpu_ && lacking != 0) worst = std::max(worst, WeightOf(singles_, lacking));
    lacking_any |= lacking;
  }
  // Nothing can fall: the fragmentation can only grow. Exactly, also in floating point: each of
  // the sums NodeFragmentationAfter adds is, term by term, at least the one before the pod,
  // and rounding is monotone.
  if (other_shapes_ == 0 && always == 0 && lacking_any == 0) return 0;
  double falling = other_weight_;
  for (uint64_t mask = always; mask != 0; mask &= mask - 1) {
    falling += singles_[std::countr_zero(mask)].weight;
  }
  if (one_gpu_) {
    falling += worst;
  } else {
    for (uint64_t mask = lacking_any; mask != 0; mask &= mask - 1) {
      falling += singles_[std::countr_zero(mask)].weight;
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

std::optional<double> RankBound::TighterLowestBucket(const state::NodeState& node) const {
  if (!enabled_ || node.any_mig || !node.summaries_current || !one_gpu_ ||
      takes_.front().mem_mib <= 0) {
    return std::nullopt;
  }
  const int64_t cpu_free = node.cpu_allocatable_milli
                               ? *node.cpu_allocatable_milli - node.cpu_used_milli
                               : std::numeric_limits<int64_t>::max();
  return LowestForOneGpu(node, cpu_.AskingMoreThan(cpu_free));
}

double RankBound::LowestForOneGpu(const state::NodeState& node, uint64_t always) const {
  const int32_t mem = takes_.front().mem_mib;
  const int32_t cores = least_cores_;
  const uint64_t singles =
      singles_.size() == 64 ? ~uint64_t{0} : (uint64_t{1} << singles_.size()) - 1;
  // Fall by the pod's take on whichever GPU it goes to: the shapes this bound does not follow,
  // and those that do not fit the node's host CPU.
  const double falling_anywhere = other_weight_ + WeightOf(singles_, always);
  const uint64_t followed = singles & ~always;
  // A margin far above the rounding of the measure's sums, far below a bucket (as in Lowest).
  constexpr double kMargin = 1e-6;
  double lowest = std::numeric_limits<double>::infinity();
  // A GPU like the one before it (as most are: empty ones, ones holding the same pods) moves
  // the measure as it does.
  const state::GpuSummary* previous = nullptr;
  // (No GPU of the node is in MIG mode: LowestBucket asks only then.)
  for (const state::GpuSummary& room : node.gpu_summaries) {
    if (room.free_mem < mem || room.free_cores < cores || room.total_mem <= 0) continue;
    if (previous != nullptr && previous->free_mem == room.free_mem &&
        previous->free_cores == room.free_cores && previous->total_mem == room.total_mem) {
      continue;
    }
    previous = &room;
    const auto lacks = [&](int64_t free_mem, int64_t free_cores) {
      return (mem_.AskingMoreThan(free_mem) | cores_.AskingMoreThan(free_cores)) & followed;
    };
    const uint64_t held_before = followed & ~lacks(room.free_mem, room.free_cores);
    const uint64_t held_after = followed & ~lacks(room.free_mem - mem, room.free_cores - cores);
    // A shape the GPU held and no longer holds finds the GPU's rest fragmented (the rest of
    // every GPU, where it no longer fits the node at all: more); one the GPU did not hold loses
    // what the pod takes from it.
    const double total = room.total_mem;
    const double gained =
        WeightOf(singles_, held_before & ~held_after) * ((room.free_mem - mem) / total);
    const double lost =
        (falling_anywhere + WeightOf(singles_, followed & ~held_before)) * (mem / total);
    // Nothing lost: the measure can only grow, exactly (as in Lowest), so at least bucket 0.
    const double floor = lost == 0
                             ? std::max(0.0, std::floor(gained / kFragmentationQuantum - kMargin))
                             : std::floor((gained - lost) / kFragmentationQuantum - kMargin);
    lowest = std::min(lowest, floor);
  }
  // No GPU with room: the pod does not fit, and the bound need not rank it.
  return lowest;
}

}  // namespace tessera::sched
