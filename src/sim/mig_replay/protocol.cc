#include "sim/mig_replay/protocol.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <deque>
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

std::optional<size_t> ArrivalIndex(std::string_view key) {
  constexpr std::string_view kPrefix = "mig/p";
  if (!key.starts_with(kPrefix)) return std::nullopt;
  const std::string_view digits = key.substr(kPrefix.size());
  size_t index = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (ec != std::errc{} || end != digits.data() + digits.size() || digits.empty()) {
    return std::nullopt;
  }
  return index;
}

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
                           bool skip_failed_types, Defragmenter* defrag,
                           const DefragSchedule& schedule) {
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

  // Arrival i was placed at time `now`: it leaves a lifetime later.
  const auto count_placed = [&](size_t i, double now) {
    const Arrival& a = arrivals[i];
    departures.emplace(now + a.lifetime, i);
    const int64_t served = placer.ServedSlices(ArrivalKey(i), a.type);
    resident_served += served;
    if (i >= warmup) {
      m.CountEverPlaced(a.type);
      m.wait_sum += now - a.time;
      m.CountWait(a.type, now - a.time);
      m.served_slices += served;
    }
  };
  // Places arrival i at time `now`; false when it does not fit.
  const auto place = [&](size_t i, double now) {
    if (!placer.Place(ArrivalKey(i), arrivals[i].type)) return false;
    count_placed(i, now);
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

  const bool defragmenting = defrag != nullptr && schedule.enabled();
  std::deque<double> evicted_at;  // times of the evictions still inside the budget's window
  int64_t rounds_done = 0;
  const auto next_round = [&] { return static_cast<double>(rounds_done + 1) * schedule.interval; };
  const auto defrag_round = [&](double now, bool measured) {
    // Evictions at least a window ago no longer count (the tolerance absorbs the rounding of
    // multiples of the interval).
    while (!evicted_at.empty() && evicted_at.front() <= now - schedule.window + 1e-9) {
      evicted_at.pop_front();
    }
    const int left = schedule.evictions_per_window - static_cast<int>(evicted_at.size());
    if (waiting.empty() || left <= 0) return;
    const DefragRound round = defrag->Run(waiting, arrivals, left);
    resident_served += round.moved_served_change;
    evicted_at.insert(evicted_at.end(), static_cast<size_t>(round.evictions), now);
    for (const size_t i : round.admitted) {
      std::erase(waiting, i);
      count_placed(i, now);
    }
    if (measured) {
      ++m.defrag.rounds;
      m.defrag.evictions += round.evictions;
      m.defrag.admitted += static_cast<int64_t>(round.admitted.size());
    }
  };

  for (size_t i = 0; i < arrivals.size(); ++i) {
    const Arrival& a = arrivals[i];
    // Departures and defragmentation rounds up to this arrival, in time order (a departure
    // before a round at the same time).
    while (true) {
      const bool departs = !departures.empty() && departures.top().first <= a.time;
      const bool rounds = defragmenting && next_round() <= a.time;
      if (!departs && !rounds) break;
      if (departs && (!rounds || departures.top().first <= next_round())) {
        const auto [when, leaving] = departures.top();
        departures.pop();
        resident_served -= placer.ServedSlices(ArrivalKey(leaving), arrivals[leaving].type);
        placer.Release(ArrivalKey(leaving));
        if (!waiting.empty()) retry_waiting(when);
        continue;
      }
      defrag_round(next_round(), i >= warmup);
      ++rounds_done;
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
    if (defragmenting && warmup < arrivals.size()) {
      m.defrag.measured_time = end - arrivals[warmup].time;
      m.defrag.total_slices = placer.TotalSlices();
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
