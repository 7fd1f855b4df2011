#include "sim/mig_replay/upper_bound.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace tessera::sim::mig_replay {
namespace {

// The served slices of one request of each type (IntendedServedSlices), looked up once.
std::vector<int64_t> SlicesByType(const MigCluster& cluster) {
  std::vector<int64_t> out(cluster.workload().types.size());
  for (size_t t = 0; t < out.size(); ++t) {
    out[t] = IntendedServedSlices(cluster, static_cast<int>(t));
  }
  return out;
}

// The most items that fit in `budget` together (the cheapest ones), and what they use.
template <class T>
std::pair<int64_t, T> CheapestWithin(std::vector<T> costs, T budget) {
  std::sort(costs.begin(), costs.end());
  int64_t count = 0;
  T used = 0;
  for (const T c : costs) {
    if (used + c > budget) break;
    used += c;
    ++count;
  }
  return {count, used};
}

}  // namespace

int64_t UsableCapacity(const MigCluster& cluster) {
  const Workload& w = cluster.workload();
  int64_t total = 0;
  for (int n = 0; n < cluster.node_count(); ++n) {
    const state::NodeState& node = *cluster.nodes()[n];
    for (size_t d = 0; d < node.devices.size(); ++d) {
      const mig::GpuMigModel& gpu = node.mig_models[d];
      const auto slices = static_cast<size_t>(gpu.memory_slices());
      std::vector<uint8_t> reach(slices + 1, 0);
      reach[0] = 1;
      for (size_t t = 0; t < w.types.size(); ++t) {
        const int profile = cluster.Intended(n, static_cast<int>(d), static_cast<int>(t));
        if (profile < 0) continue;
        const auto size = static_cast<size_t>(gpu.profiles()[profile].placements.front().size);
        for (size_t c = size; c <= slices; ++c) reach[c] |= reach[c - size];  // any number
      }
      size_t best = slices;
      while (best > 0 && reach[best] == 0) --best;
      total += static_cast<int64_t>(best);
    }
  }
  return total;
}

RunMetrics UpperBoundSaturation(const MigCluster& cluster, const std::vector<Arrival>& arrivals) {
  RunMetrics m;
  m.arrived = static_cast<int64_t>(arrivals.size());
  const int64_t capacity = UsableCapacity(cluster);
  const std::vector<int64_t> by_type = SlicesByType(cluster);
  std::vector<int64_t> sizes;
  sizes.reserve(arrivals.size());
  for (const Arrival& a : arrivals) {
    const int64_t s = by_type[static_cast<size_t>(a.type)];
    if (s > 0) sizes.push_back(s);  // a request no GPU can hold is never accepted
  }
  // The largest subset sum within the capacity.
  std::vector<uint8_t> reach(static_cast<size_t>(capacity) + 1, 0);
  reach[0] = 1;
  for (const int64_t s : sizes) {
    for (int64_t c = capacity; c >= s; --c) {
      reach[static_cast<size_t>(c)] |= reach[static_cast<size_t>(c - s)];
    }
  }
  int64_t best = capacity;
  while (best > 0 && reach[static_cast<size_t>(best)] == 0) --best;
  m.served_slices = best;
  // The most requests that fit: the smallest ones.
  m.accepted = CheapestWithin(std::move(sizes), capacity).first;
  m.served_ratio = static_cast<double>(m.served_slices) /
                   static_cast<double>(std::max<int64_t>(1, cluster.total_memory_slices()));
  return m;
}

RunMetrics UpperBoundSteadyState(const MigCluster& cluster, const std::vector<Arrival>& arrivals,
                                 size_t warmup) {
  RunMetrics m;
  if (arrivals.size() <= warmup) return m;
  const double start = arrivals[warmup].time;
  const double end = arrivals.back().time;
  m.arrived = static_cast<int64_t>(arrivals.size() - warmup);
  const double budget = static_cast<double>(UsableCapacity(cluster)) * (end - start);
  // Each measured request's cost: its demand times its time inside [start, end].
  const std::vector<int64_t> by_type = SlicesByType(cluster);
  std::vector<double> costs;
  costs.reserve(arrivals.size() - warmup);
  for (size_t i = warmup; i < arrivals.size(); ++i) {
    const int64_t s = by_type[static_cast<size_t>(arrivals[i].type)];
    if (s == 0) continue;
    costs.push_back(static_cast<double>(s) *
                    std::min(arrivals[i].lifetime, end - arrivals[i].time));
  }
  const auto [accepted, used] = CheapestWithin(std::move(costs), budget);
  m.accepted = accepted;
  const double window = std::max(end - start, 1e-12);
  m.served_ratio =
      used / window / static_cast<double>(std::max<int64_t>(1, cluster.total_memory_slices()));
  return m;
}

}  // namespace tessera::sim::mig_replay
