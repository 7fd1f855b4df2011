#include "sim/replay/workload.h"

#include <algorithm>
#include <string>

namespace tessera::sim::replay {

size_t UniformIndex(std::mt19937_64& rng, size_t n) {
  if (n <= 1) return 0;
  // Reject the lowest (2^64 mod n) values so that every residue is equally likely.
  const uint64_t bound = static_cast<uint64_t>(n);
  const uint64_t threshold = (0 - bound) % bound;
  uint64_t draw = rng();
  while (draw < threshold) draw = rng();
  return static_cast<size_t>(draw % bound);
}

namespace {

template <class T>
void FisherYates(std::vector<T>& items, std::mt19937_64& rng) {
  for (size_t i = items.size(); i > 1; --i) {
    size_t j = UniformIndex(rng, i);
    std::swap(items[i - 1], items[j]);
  }
}

}  // namespace

void Shuffle(std::vector<TracePod>& pods, std::mt19937_64& rng) { FisherYates(pods, rng); }

std::vector<TraceNode> SchedulerNodeOrder(const std::vector<TraceNode>& nodes,
                                          std::mt19937_64& rng) {
  std::vector<TraceNode> order = nodes;
  std::stable_sort(order.begin(), order.end(),
                   [](const TraceNode& a, const TraceNode& b) { return a.name < b.name; });
  FisherYates(order, rng);
  return order;
}

std::vector<TracePod> Inflate(const std::vector<TracePod>& pods, int64_t total_gpu_milli,
                              double tune, std::mt19937_64& rng) {
  // SetWorkloadPods: the pool of pods to copy from, sorted by name.
  std::vector<TracePod> by_name = pods;
  std::stable_sort(by_name.begin(), by_name.end(),
                   [](const TracePod& a, const TracePod& b) { return a.name < b.name; });

  std::vector<TracePod> order = by_name;
  Shuffle(order, rng);
  if (tune <= 0 || order.empty()) return order;

  int64_t requested = 0;
  for (const TracePod& pod : order) requested += pod.TotalGpuMilli();
  const double target = tune * static_cast<double>(total_gpu_milli);

  if (static_cast<double>(requested) < target) {
    // Without any GPU pod the target could never be reached; the simulator would spin forever.
    if (requested == 0) return order;
    for (int64_t copy = 0;; ++copy) {
      const TracePod& drawn = by_name[UniformIndex(rng, by_name.size())];
      if (static_cast<double>(requested + drawn.gpu_milli) > target) break;
      requested += drawn.TotalGpuMilli();
      TracePod tuned = drawn;
      tuned.name += "-tuned-" + std::to_string(copy);
      order.push_back(std::move(tuned));
    }
  } else {
    while (static_cast<double>(requested) > target && !order.empty()) {
      size_t victim = UniformIndex(rng, order.size());
      requested -= order[victim].TotalGpuMilli();
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(victim));
    }
  }
  return order;
}

std::vector<TracePod> Inflate(const std::vector<TracePod>& pods, int64_t total_gpu_milli,
                              double tune, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return Inflate(pods, total_gpu_milli, tune, rng);
}

}  // namespace tessera::sim::replay
