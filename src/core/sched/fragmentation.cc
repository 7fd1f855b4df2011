#include "core/sched/fragmentation.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string_view>

#include "core/common/small_buffer.h"

namespace tessera::sched {

DemandMix& DemandMix::operator=(const DemandMix& other) {
  if (this == &other) return *this;
  decay_ = other.decay_;
  coverage_ = other.coverage_;
  max_shapes_ = other.max_shapes_;
  scale_ = other.scale_;
  counts_ = other.counts_;
  ranked_.clear();
  ranked_valid_ = false;
  version_ = other.version_;
  target_version_ = ~0ULL;
  target_.clear();
  return *this;
}

void DemandMix::Observe(const DemandShape& shape, double weight) {
  if (decay_ < 1.0) {
    scale_ *= decay_;
    // Renormalise before the stored counts grow past what a double holds precisely.
    if (scale_ < 1e-100) {
      for (auto& [s, c] : counts_) c *= scale_;
      scale_ = 1.0;
      ranked_valid_ = false;  // rounding may reorder equal or close counts
    }
  }
  auto [it, inserted] = counts_.try_emplace(shape, 0.0);
  it->second += weight / scale_;
  ++version_;
  if (!ranked_valid_) return;
  // Only this shape's count changed: move it to its place in the ranking.
  if (!inserted) ranked_.erase(std::find(ranked_.begin(), ranked_.end(), it));
  ranked_.insert(std::lower_bound(ranked_.begin(), ranked_.end(), it, RanksBefore), it);
}

const std::vector<WeightedShape>& DemandMix::Target() const {
  if (target_version_ == version_) return target_;
  target_version_ = version_;
  target_.clear();
  if (!ranked_valid_) {
    ranked_.clear();
    for (auto it = counts_.begin(); it != counts_.end(); ++it) ranked_.push_back(it);
    std::sort(ranked_.begin(), ranked_.end(), RanksBefore);
    ranked_valid_ = true;
  }
  double total = 0;
  for (const auto& [shape, count] : counts_) total += count;
  if (total <= 0) return target_;
  // Most frequent first; ties by shape order, so the target is deterministic.
  double covered = 0;
  for (const auto& it : ranked_) {
    if (covered >= coverage_ * total || target_.size() >= max_shapes_) break;
    target_.push_back(WeightedShape{it->first, it->second});
    covered += it->second;
  }
  for (auto& w : target_) w.weight /= covered;
  return target_;
}

namespace {

// `wanted` is a comma list of model substrings (nvidia.com/use-gputype): any one matches.
bool TypeMatches(const std::string& node_type, const std::string& wanted) {
  if (wanted.empty()) return true;
  size_t begin = 0;
  while (begin <= wanted.size()) {
    size_t end = wanted.find(',', begin);
    if (end == std::string::npos) end = wanted.size();
    if (end > begin &&
        node_type.find(std::string_view(wanted).substr(begin, end - begin)) != std::string::npos) {
      return true;
    }
    begin = end + 1;
  }
  return false;
}

}  // namespace

PreparedTarget::PreparedTarget(const std::vector<WeightedShape>& shapes) : shapes_(&shapes) {
  compact_.reserve(shapes.size());
  for (const auto& [shape, p] : shapes) {
    const std::pair<int32_t, int32_t> demand{shape.gpu_mem_mib, shape.gpu_cores};
    auto d = std::find(demands_.begin(), demands_.end(), demand);
    if (d == demands_.end()) d = demands_.insert(demands_.end(), demand);
    int32_t type = -1;
    if (!shape.gpu_type.empty()) {
      auto t = std::find(types_.begin(), types_.end(), shape.gpu_type);
      if (t == types_.end()) t = types_.insert(types_.end(), shape.gpu_type);
      type = static_cast<int32_t>(t - types_.begin());
    }
    compact_.push_back(
        Shape{p, shape.cpu_milli, shape.gpus, static_cast<int32_t>(d - demands_.begin()), type});
  }
}

double NodeFragmentation(const NodeCapacity& node, const PreparedTarget& target) {
  return NodeFragmentationAfter(node, target, {}, 0);
}

double NodeFragmentationAfter(const NodeCapacity& node, const PreparedTarget& target,
                              std::span<const GpuTake> takes, int64_t cpu_milli) {
  const size_t n = node.gpu_free_mem.size();
  // Every GPU's free memory and cores after the takes.
  SmallBuffer<int32_t, 16> mem_after(n, 0);
  SmallBuffer<int32_t, 16> cores_after(n, 0);
  std::copy(node.gpu_free_mem.begin(), node.gpu_free_mem.end(), mem_after.span().begin());
  std::copy(node.gpu_free_cores.begin(), node.gpu_free_cores.end(), cores_after.span().begin());
  for (const GpuTake& take : takes) {
    const auto g = static_cast<size_t>(take.gpu);
    mem_after[g] = std::max(0, mem_after[g] - take.mem_mib);
    cores_after[g] = std::max(0, cores_after[g] - take.cores);
  }
  // The usable GPUs, in order: free memory and cores, and free memory as a fraction of the total.
  SmallBuffer<int32_t, 16> free_mem(n, 0);
  SmallBuffer<int32_t, 16> free_cores(n, 0);
  SmallBuffer<double, 16> fraction(n, 0.0);
  size_t usable = 0;
  double total_free = 0;
  for (size_t g = 0; g < n; ++g) {
    if (!node.gpu_usable[g]) continue;
    double f = 0;
    if (node.gpu_total_mem[g] > 0) {
      f = static_cast<double>(mem_after[g]) / node.gpu_total_mem[g];
      total_free += f;
    }
    free_mem[usable] = mem_after[g];
    free_cores[usable] = cores_after[g];
    fraction[usable] = f;
    ++usable;
  }
  if (total_free <= 0) return 0;
  // Unknown host capacity is never the bottleneck.
  const int64_t cpu_free =
      node.cpu_free_milli ? *node.cpu_free_milli - cpu_milli : std::numeric_limits<int64_t>::max();
  // Per distinct per-GPU demand, worked out when a shape first needs it: how many GPUs can hold
  // it, and the free capacity of the others, summed in GPU order (adding 0.0 for a holder leaves
  // the sum as it was). holders < 0: not worked out yet.
  struct PerDemand {
    int holders;
    double unusable;
  };
  SmallBuffer<PerDemand, 64> per_demand(target.demands_.size(), PerDemand{-1, 0.0});
  // Per distinct model list: unknown (-1), or whether the node's model matches it.
  SmallBuffer<int8_t, 64> type_match(target.types_.size(), int8_t{-1});
  double fragmented = 0;
  for (const PreparedTarget::Shape& shape : target.compact_) {
    // A shape that does not fit the node at all finds all of its free capacity fragmented.
    double fragments = total_free;
    bool fits = shape.gpus > 0 && cpu_free >= shape.cpu_milli;
    if (fits && shape.type >= 0) {
      int8_t& match = type_match[shape.type];
      if (match < 0) match = TypeMatches(node.gpu_type, target.types_[shape.type]) ? 1 : 0;
      fits = match == 1;
    }
    if (fits) {
      PerDemand& d = per_demand[shape.demand];
      if (d.holders < 0) {
        const auto [mem, cores] = target.demands_[shape.demand];
        int holders = 0;
        double unusable = 0;
        for (size_t i = 0; i < usable; ++i) {
          const bool holds = free_mem[i] >= mem && free_cores[i] >= cores;
          holders += holds ? 1 : 0;
          unusable += holds ? 0.0 : fraction[i];
        }
        d = PerDemand{holders, unusable};
      }
      if (d.holders >= shape.gpus) fragments = d.unusable;
    }
    fragmented += shape.weight * fragments;
  }
  return fragmented;
}

double NodeFragmentation(const NodeCapacity& node, const std::vector<WeightedShape>& target) {
  return NodeFragmentation(node, PreparedTarget(target));
}

void NodeFragmentationWorkspace::Reset(const NodeCapacity& node, const PreparedTarget& target) {
  node_ = &node;
  target_ = &target;
  const size_t n = node.gpu_free_mem.size();
  position_.assign(n, -1);
  free_mem_.clear();
  free_cores_.clear();
  fraction_.clear();
  has_memory_.clear();
  total_sums_.assign(1, 0.0);
  for (size_t g = 0; g < n; ++g) {
    if (!node.gpu_usable[g]) continue;
    position_[g] = static_cast<int32_t>(free_mem_.size());
    const bool memory = node.gpu_total_mem[g] > 0;
    const double f = memory ? static_cast<double>(node.gpu_free_mem[g]) / node.gpu_total_mem[g] : 0;
    free_mem_.push_back(node.gpu_free_mem[g]);
    free_cores_.push_back(node.gpu_free_cores[g]);
    fraction_.push_back(f);
    has_memory_.push_back(memory);
    total_sums_.push_back(memory ? total_sums_.back() + f : total_sums_.back());
  }
  usable_ = free_mem_.size();
  demands_.assign(target.demands_.size(), Demand{});
  demand_sums_.resize(target.demands_.size() * (usable_ + 1));
  type_match_.assign(target.types_.size(), int8_t{-1});
}

const NodeFragmentationWorkspace::Demand& NodeFragmentationWorkspace::DemandAt(int32_t d) {
  Demand& demand = demands_[d];
  if (demand.known) return demand;
  const auto [mem, cores] = target_->demands_[d];
  double* sums = &demand_sums_[static_cast<size_t>(d) * (usable_ + 1)];
  sums[0] = 0;
  for (size_t i = 0; i < usable_; ++i) {
    const bool holds = free_mem_[i] >= mem && free_cores_[i] >= cores;
    demand.holders += holds ? 1 : 0;
    demand.holds |= holds && i < 64 ? uint64_t{1} << i : 0;
    // Adding 0.0 for a holder (as NodeFragmentationAfter does) leaves the sum as it was.
    sums[i + 1] = holds ? sums[i] : sums[i] + fraction_[i];
  }
  demand.known = true;
  return demand;
}

double NodeFragmentationWorkspace::Before() {
  if (total_sums_.back() <= 0) return 0;
  const int64_t cpu_free =
      node_->cpu_free_milli ? *node_->cpu_free_milli : std::numeric_limits<int64_t>::max();
  return ShapesSum(total_sums_.back(), cpu_free, -1, 0, 0, 0);
}

double NodeFragmentationWorkspace::After(const GpuTake& take, int64_t cpu_milli) {
  const auto g = static_cast<size_t>(take.gpu);
  const int64_t cpu_free = node_->cpu_free_milli ? *node_->cpu_free_milli - cpu_milli
                                                 : std::numeric_limits<int64_t>::max();
  const int k = position_[g];
  if (k < 0 || usable_ > 64) {
    // A take on a GPU the measure does not count changes only the host CPU (or, beyond 64 GPUs,
    // the holders' bits do not fit: the plain function).
    if (k >= 0) return NodeFragmentationAfter(*node_, *target_, {&take, 1}, cpu_milli);
    if (total_sums_.back() <= 0) return 0;
    return ShapesSum(total_sums_.back(), cpu_free, -1, 0, 0, 0);
  }
  const int32_t mem = std::max(0, node_->gpu_free_mem[g] - take.mem_mib);
  const int32_t cores = std::max(0, node_->gpu_free_cores[g] - take.cores);
  const double f = has_memory_[k] ? static_cast<double>(mem) / node_->gpu_total_mem[g] : 0;
  double total_free = total_sums_[k];
  if (has_memory_[k]) total_free += f;
  for (size_t i = static_cast<size_t>(k) + 1; i < usable_; ++i) {
    if (has_memory_[i]) total_free += fraction_[i];
  }
  if (total_free <= 0) return 0;
  return ShapesSum(total_free, cpu_free, k, mem, cores, f);
}

double NodeFragmentationWorkspace::ShapesSum(double total_free, int64_t cpu_free, int position,
                                             int32_t mem, int32_t cores, double fraction) {
  // NodeFragmentationAfter's loop over the shapes, with the usable GPU at `position` (-1: none)
  // holding `mem`, `cores` and `fraction` instead of what Reset read. Per demand, worked out
  // once per call: holders < 0 not yet.
  constexpr int kUnknown = -1;
  struct PerDemand {
    int holders;
    double unusable;
  };
  SmallBuffer<PerDemand, 64> per_demand(target_->demands_.size(), PerDemand{kUnknown, 0.0});
  double fragmented = 0;
  for (const PreparedTarget::Shape& shape : target_->compact_) {
    double fragments = total_free;
    bool fits = shape.gpus > 0 && cpu_free >= shape.cpu_milli;
    if (fits && shape.type >= 0) {
      int8_t& match = type_match_[shape.type];
      if (match < 0) match = TypeMatches(node_->gpu_type, target_->types_[shape.type]) ? 1 : 0;
      fits = match == 1;
    }
    if (fits) {
      PerDemand& d = per_demand[shape.demand];
      if (d.holders == kUnknown) {
        const Demand& base = DemandAt(shape.demand);
        const double* sums = &demand_sums_[static_cast<size_t>(shape.demand) * (usable_ + 1)];
        if (position < 0) {
          d = PerDemand{base.holders, sums[usable_]};
        } else {
          // The sums up to the take's GPU are the node's; from it on they are added again.
          const auto [dmem, dcores] = target_->demands_[shape.demand];
          const bool held_before = (base.holds >> position) & 1U;
          const bool holds = mem >= dmem && cores >= dcores;
          double unusable = sums[position];
          if (!holds) unusable += fraction;
          for (size_t i = static_cast<size_t>(position) + 1; i < usable_; ++i) {
            if (((base.holds >> i) & 1U) == 0) unusable += fraction_[i];
          }
          d = PerDemand{base.holders - (held_before ? 1 : 0) + (holds ? 1 : 0), unusable};
        }
      }
      if (d.holders >= shape.gpus) fragments = d.unusable;
    }
    fragmented += shape.weight * fragments;
  }
  return fragmented;
}

}  // namespace tessera::sched
