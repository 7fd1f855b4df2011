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

}  // namespace tessera::sched
