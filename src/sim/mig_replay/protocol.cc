#include "sim/mig_replay/protocol.h"

#include <functional>
#include <queue>
#include <utility>

namespace tessera::sim::mig_replay {
namespace {

void Accumulate(Snapshot& sum, const Snapshot& s) {
  sum.memory_slice_ratio += s.memory_slice_ratio;
  sum.compute_slice_ratio += s.compute_slice_ratio;
  sum.gpus_in_use_ratio += s.gpus_in_use_ratio;
  sum.stranded_ratio += s.stranded_ratio;
  sum.fragmentation_ratio += s.fragmentation_ratio;
}

Snapshot Scaled(Snapshot s, double factor) {
  s.memory_slice_ratio *= factor;
  s.compute_slice_ratio *= factor;
  s.gpus_in_use_ratio *= factor;
  s.stranded_ratio *= factor;
  s.fragmentation_ratio *= factor;
  return s;
}

int SlicesOf(const mig::GpuMigModel& gpu, int profile) {
  return static_cast<int>(gpu.profiles()[profile].placements.front().size);
}

}  // namespace

std::string ArrivalKey(size_t i) { return "mig/p" + std::to_string(i); }

bool PolicyPlacer::Place(const std::string& key, int type) {
  return policy_.Place(cluster_, key, type);
}

int64_t PolicyPlacer::ServedSlices(int type) const { return IntendedServedSlices(cluster_, type); }

int64_t IntendedServedSlices(const MigCluster& cluster, int type) {
  // The mixed fleet holds only models with 8 memory slices and the same profile sizes.
  for (int n = 0; n < cluster.node_count(); ++n) {
    const int profile = cluster.Intended(n, 0, type);
    if (profile < 0) continue;
    return static_cast<int64_t>(SlicesOf(cluster.nodes()[n]->mig_models[0], profile)) *
           cluster.workload().types[type].count;
  }
  return 0;
}

RunMetrics RunSaturation(Placer& placer, const std::vector<Arrival>& arrivals,
                         int stop_after_rejections) {
  RunMetrics m;
  m.arrived = static_cast<int64_t>(arrivals.size());
  int consecutive = 0;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    if (placer.Place(ArrivalKey(i), arrivals[i].type)) {
      ++m.accepted;
      m.served_slices += placer.ServedSlices(arrivals[i].type);
      consecutive = 0;
    } else if (stop_after_rejections > 0 && ++consecutive >= stop_after_rejections) {
      break;
    }
  }
  m.snapshot = placer.Measure();
  m.served_ratio = static_cast<double>(m.served_slices) / static_cast<double>(placer.TotalSlices());
  return m;
}

RunMetrics RunSteadyState(Placer& placer, const std::vector<Arrival>& arrivals, size_t warmup) {
  using Departure = std::pair<double, size_t>;  // (time, arrival index)
  std::priority_queue<Departure, std::vector<Departure>, std::greater<>> departures;
  RunMetrics m;
  Snapshot sum;
  int64_t resident_served = 0;  // served slices of the pods in the cluster now
  double served_sum = 0;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    const Arrival& a = arrivals[i];
    while (!departures.empty() && departures.top().first <= a.time) {
      const size_t leaving = departures.top().second;
      placer.Release(ArrivalKey(leaving));
      resident_served -= placer.ServedSlices(arrivals[leaving].type);
      departures.pop();
    }
    const bool measured = i >= warmup;
    if (measured) {
      Accumulate(sum, placer.Measure());
      served_sum += static_cast<double>(resident_served);
      ++m.arrived;
    }
    if (!placer.Place(ArrivalKey(i), a.type)) continue;
    departures.emplace(a.time + a.lifetime, i);
    resident_served += placer.ServedSlices(a.type);
    if (measured) {
      ++m.accepted;
      m.served_slices += placer.ServedSlices(a.type);
    }
  }
  if (m.arrived > 0) {
    m.snapshot = Scaled(sum, 1.0 / static_cast<double>(m.arrived));
    m.served_ratio =
        served_sum / static_cast<double>(m.arrived) / static_cast<double>(placer.TotalSlices());
  }
  return m;
}

double ExpectedGpuShare(const MigCluster& cluster) {
  const Workload& w = cluster.workload();
  double total = 0;
  for (int n = 0; n < cluster.node_count(); ++n) {
    const state::NodeState& node = *cluster.nodes()[n];
    for (size_t d = 0; d < node.devices.size(); ++d) {
      const mig::GpuMigModel& gpu = node.mig_models[d];
      for (size_t t = 0; t < w.types.size(); ++t) {
        const int profile = cluster.Intended(n, static_cast<int>(d), static_cast<int>(t));
        const double share =
            profile < 0 ? 1.0 : static_cast<double>(SlicesOf(gpu, profile)) / gpu.memory_slices();
        total += w.probabilities[t] * share * w.types[t].count;
      }
    }
  }
  return total / cluster.gpu_count();
}

}  // namespace tessera::sim::mig_replay
