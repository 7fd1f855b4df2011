#include "core/sched/fragmentation.h"

#include <algorithm>
#include <cmath>

namespace tessera::sched {

void DemandMix::Observe(const DemandShape& shape, double weight) {
  if (decay_ < 1.0) {
    scale_ *= decay_;
    // Renormalise before the stored counts grow past what a double holds precisely.
    if (scale_ < 1e-100) {
      for (auto& [s, c] : counts_) c *= scale_;
      scale_ = 1.0;
    }
  }
  counts_[shape] += weight / scale_;
  ++version_;
}

const std::vector<WeightedShape>& DemandMix::Target() const {
  if (target_version_ == version_) return target_;
  target_version_ = version_;
  target_.clear();
  std::vector<std::pair<double, const DemandShape*>> ranked;
  double total = 0;
  for (const auto& [shape, count] : counts_) {
    ranked.emplace_back(count, &shape);
    total += count;
  }
  if (total <= 0) return target_;
  // Most frequent first; ties by shape order, so the target is deterministic.
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  double covered = 0;
  for (const auto& [count, shape] : ranked) {
    if (covered >= coverage_ * total || target_.size() >= max_shapes_) break;
    target_.push_back(WeightedShape{*shape, count});
    covered += count;
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
    if (end > begin && node_type.find(wanted.substr(begin, end - begin)) != std::string::npos) {
      return true;
    }
    begin = end + 1;
  }
  return false;
}

}  // namespace

double NodeFragmentation(const NodeCapacity& node, const std::vector<WeightedShape>& target) {
  const size_t n = node.gpu_free_mem.size();
  double total_free = 0;
  std::vector<double> free_fraction(n, 0);
  for (size_t g = 0; g < n; ++g) {
    if (!node.gpu_usable[g] || node.gpu_total_mem[g] <= 0) continue;
    free_fraction[g] = static_cast<double>(node.gpu_free_mem[g]) / node.gpu_total_mem[g];
    total_free += free_fraction[g];
  }
  if (total_free <= 0) return 0;
  double fragmented = 0;
  for (const auto& [shape, p] : target) {
    bool fits = shape.gpus > 0 && TypeMatches(node.gpu_type, shape.gpu_type) &&
                (!node.cpu_free_milli || *node.cpu_free_milli >= shape.cpu_milli);
    double unusable = 0;
    int holders = 0;
    if (fits) {
      for (size_t g = 0; g < n; ++g) {
        if (!node.gpu_usable[g]) continue;
        if (node.gpu_free_mem[g] >= shape.gpu_mem_mib &&
            node.gpu_free_cores[g] >= shape.gpu_cores) {
          ++holders;
        } else {
          unusable += free_fraction[g];
        }
      }
      fits = holders >= shape.gpus;
    }
    fragmented += p * (fits ? unusable : total_free);
  }
  return fragmented;
}

}  // namespace tessera::sched
