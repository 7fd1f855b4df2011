#include "sim/mig_replay/protocol.h"

#include <algorithm>
#include <cstdint>
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
  if (error_) return false;
  Result<replay::PlaceOutcome> placed = policy_.Place(cluster_, type, key, rng_);
  if (!placed.ok()) {
    error_ = placed.error();
    return false;
  }
  return *placed == replay::PlaceOutcome::kPlaced;
}

int64_t IntendedServedSlices(const MigCluster& cluster, int type) {
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
  for (const Arrival& a : arrivals) m.CountArrived(a.type);  // the unseen rest included
  int consecutive = 0;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    if (placer.Place(ArrivalKey(i), arrivals[i].type)) {
      m.CountAccepted(arrivals[i].type);
      m.served_slices += placer.ServedSlices(ArrivalKey(i), arrivals[i].type);
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
      resident_served -= placer.ServedSlices(ArrivalKey(leaving), arrivals[leaving].type);
      placer.Release(ArrivalKey(leaving));
      departures.pop();
    }
    const bool measured = i >= warmup;
    if (measured) {
      Accumulate(sum, placer.Measure());
      served_sum += static_cast<double>(resident_served);
      m.CountArrived(a.type);
    }
    if (!placer.Place(ArrivalKey(i), a.type)) continue;
    departures.emplace(a.time + a.lifetime, i);
    const int64_t served = placer.ServedSlices(ArrivalKey(i), a.type);
    resident_served += served;
    if (measured) {
      m.CountAccepted(a.type);
      m.served_slices += served;
    }
  }
  if (m.arrived > 0) {
    m.snapshot = Scaled(sum, 1.0 / static_cast<double>(m.arrived));
    m.served_ratio =
        served_sum / static_cast<double>(m.arrived) / static_cast<double>(placer.TotalSlices());
  }
  return m;
}

RunMetrics RunPendingQueue(Placer& placer, const std::vector<Arrival>& arrivals, size_t warmup,
                           bool skip_failed_types) {
  using Departure = std::pair<double, size_t>;  // (time, arrival index)
  std::priority_queue<Departure, std::vector<Departure>, std::greater<>> departures;
  std::vector<size_t> waiting;  // arrival indices, oldest first
  RunMetrics m;
  Snapshot sum;
  int64_t resident_served = 0;
  double served_sum = 0;
  int type_count = 0;
  for (const Arrival& a : arrivals) type_count = std::max(type_count, a.type + 1);
  std::vector<uint8_t> failed(static_cast<size_t>(type_count), 0);

  // Places arrival i at time `now`; false when it does not fit.
  const auto place = [&](size_t i, double now) {
    const Arrival& a = arrivals[i];
    if (!placer.Place(ArrivalKey(i), a.type)) return false;
    departures.emplace(now + a.lifetime, i);
    const int64_t served = placer.ServedSlices(ArrivalKey(i), a.type);
    resident_served += served;
    if (i >= warmup) {
      m.CountEverPlaced(a.type);
      m.wait_sum += now - a.time;
      m.CountWait(a.type, now - a.time);
      m.served_slices += served;
    }
    return true;
  };
  const auto retry_waiting = [&](double now) {
    std::fill(failed.begin(), failed.end(), 0);
    std::vector<size_t> still;
    still.reserve(waiting.size());
    for (const size_t i : waiting) {
      const int type = arrivals[i].type;
      if (skip_failed_types && failed[type] != 0) {
        still.push_back(i);
        continue;
      }
      if (!place(i, now)) {
        failed[type] = 1;
        still.push_back(i);
      }
    }
    waiting.swap(still);
  };

  for (size_t i = 0; i < arrivals.size(); ++i) {
    const Arrival& a = arrivals[i];
    while (!departures.empty() && departures.top().first <= a.time) {
      const auto [when, leaving] = departures.top();
      departures.pop();
      resident_served -= placer.ServedSlices(ArrivalKey(leaving), arrivals[leaving].type);
      placer.Release(ArrivalKey(leaving));
      if (!waiting.empty()) retry_waiting(when);
    }
    const bool measured = i >= warmup;
    if (measured) {
      Accumulate(sum, placer.Measure());
      served_sum += static_cast<double>(resident_served);
      m.CountArrived(a.type);
    }
    if (place(i, a.time)) {
      if (measured) m.CountAccepted(a.type);
    } else {
      waiting.push_back(i);
    }
  }
  // Censored: a measured request still waiting at the end waited at least until then.
  if (!arrivals.empty()) {
    const double end = arrivals.back().time;
    for (const size_t i : waiting) {
      if (i >= warmup) m.CountWait(arrivals[i].type, end - arrivals[i].time);
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
