#include "sim/mig_replay/upper_bound.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <utility>

#include "sim/replay/glpk_problem.h"

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

// What the GPUs can hold of the workload's intended profiles, in slices and in MiB (any number
// of each profile per GPU: an unbounded knapsack over its memory slices), and each request
// type's extremes over the GPUs.
struct IntendedCapacity {
  int64_t slices = 0;                // summed per GPU: the most slices intended sizes fill
  int64_t mib = 0;                   // summed per GPU: the most intended MiB its slices hold
  int64_t demand = 0;                // summed per GPU: the most demand (DemandOf) its slices hold
  std::vector<int64_t> least_mib;    // per type: count x its smallest intended MiB; 0: none
  std::vector<int64_t> most_slices;  // per type: count x its largest intended slices
  std::vector<int64_t> most_demand;  // per type: count x its largest DemandOf
};

IntendedCapacity MeasureIntended(const MigCluster& cluster) {
  const Workload& w = cluster.workload();
  IntendedCapacity out;
  out.least_mib.assign(w.types.size(), 0);
  out.most_slices.assign(w.types.size(), 0);
  out.most_demand.assign(w.types.size(), 0);
  for (int n = 0; n < cluster.node_count(); ++n) {
    const state::NodeState& node = *cluster.nodes()[n];
    for (size_t d = 0; d < node.devices.size(); ++d) {
      const mig::GpuMigModel& gpu = node.mig_models[d];
      const auto slices = static_cast<size_t>(gpu.memory_slices());
      // The most slices and the most MiB within c slices.
      std::vector<int64_t> by_slices(slices + 1, 0);
      std::vector<int64_t> by_mib(slices + 1, 0);
      std::vector<int64_t> by_demand(slices + 1, 0);
      for (size_t t = 0; t < w.types.size(); ++t) {
        const int profile = cluster.Intended(n, static_cast<int>(d), static_cast<int>(t));
        if (profile < 0) continue;
        const model::MigProfile& p = gpu.profiles()[profile];
        const auto size = static_cast<size_t>(p.placements.front().size);
        const int64_t demand = cluster.DemandOf(n, static_cast<int>(d), static_cast<int>(t));
        for (size_t c = size; c <= slices; ++c) {
          by_slices[c] = std::max(by_slices[c], by_slices[c - size] + static_cast<int64_t>(size));
          by_mib[c] = std::max(by_mib[c], by_mib[c - size] + p.memory_mib);
          by_demand[c] = std::max(by_demand[c], by_demand[c - size] + demand);
        }
        const int64_t count = w.types[t].count;
        int64_t& least = out.least_mib[t];
        if (least == 0 || p.memory_mib * count < least) least = p.memory_mib * count;
        out.most_slices[t] = std::max(out.most_slices[t], static_cast<int64_t>(size) * count);
        out.most_demand[t] = std::max(out.most_demand[t], demand * count);
      }
      out.slices += by_slices[slices];
      out.mib += by_mib[slices];
      out.demand += by_demand[slices];
    }
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

double IntervalAcceptanceBound(std::vector<ResidentRequest> requests, int64_t capacity) {
  std::erase_if(requests,
                [&](const ResidentRequest& r) { return r.size <= 0 || r.size > capacity; });
  if (requests.empty() || capacity <= 0) return 0;
  // The instants where the resident set changes, in order; a request of zero length gets the
  // next instant as its end so that it holds its capacity for a moment.
  std::vector<double> instants;
  instants.reserve(2 * requests.size());
  for (const ResidentRequest& r : requests) {
    instants.push_back(r.start);
    instants.push_back(r.end);
  }
  std::sort(instants.begin(), instants.end());
  instants.erase(std::unique(instants.begin(), instants.end()), instants.end());
  instants.push_back(instants.back() + 1);  // after every end
  auto index = [&](double t) {
    return static_cast<int>(std::lower_bound(instants.begin(), instants.end(), t) -
                            instants.begin());
  };
  const int points = static_cast<int>(instants.size());

  const replay::GlpkEnvironment environment;
  replay::GlpkProblem lp(glp_create_prob(), &glp_delete_prob);
  glp_set_obj_dir(lp.get(), GLP_MAX);
  // One row per instant: what flows in minus what flows out; the capacity enters at the first
  // and leaves at the last.
  glp_add_rows(lp.get(), points);
  const auto cap = static_cast<double>(capacity);
  for (int k = 0; k < points; ++k) {
    const double b = k == 0 ? -cap : (k == points - 1 ? cap : 0);
    glp_set_row_bnds(lp.get(), k + 1, GLP_FX, b, b);
  }
  std::vector<int> rows{0};
  std::vector<int> cols{0};
  std::vector<double> values{0};
  int column = 0;
  auto arc = [&](int from, int to, double upper, double worth) {
    ++column;
    glp_add_cols(lp.get(), 1);
    glp_set_col_bnds(lp.get(), column, GLP_DB, 0, upper);
    glp_set_obj_coef(lp.get(), column, worth);
    rows.push_back(from + 1), cols.push_back(column), values.push_back(-1);
    rows.push_back(to + 1), cols.push_back(column), values.push_back(1);
  };
  for (int k = 0; k + 1 < points; ++k) arc(k, k + 1, cap, 0);  // the time line
  for (const ResidentRequest& r : requests) {
    const int from = index(r.start);
    const int to = std::max(index(r.end), from + 1);
    const auto size = static_cast<double>(r.size);
    arc(from, to, size, 1 / size);
  }
  if (!replay::SolveQuietly(lp.get(), rows, cols, values, /*scale=*/false)) return -1;
  return glp_get_obj_val(lp.get());
}

int64_t UsableCapacity(const MigCluster& cluster) { return MeasureIntended(cluster).slices; }

BoundUnits SliceUnits(const MigCluster& cluster) {
  return BoundUnits{UsableCapacity(cluster), SlicesByType(cluster)};
}

BoundUnits MemoryUnits(const MigCluster& cluster) {
  IntendedCapacity measured = MeasureIntended(cluster);
  return BoundUnits{measured.mib, std::move(measured.least_mib)};
}

namespace {

// The units the pod counts are bounded in: slices where they mean the same on every GPU.
BoundUnits PodCountUnits(const MigCluster& cluster) {
  return cluster.UniformSlices() ? SliceUnits(cluster) : MemoryUnits(cluster);
}

// The most demand the GPUs can hold as a share of the demand capacity: what no policy's demand
// served exceeds.
double UsableShare(const MigCluster& cluster) {
  return static_cast<double>(MeasureIntended(cluster).demand) /
         static_cast<double>(std::max<int64_t>(1, cluster.demand_capacity()));
}

// Demand served as protocol (b) measures it, just before each measured arrival: then a policy
// holds at most the pods that arrived earlier and have not left, and no more than the usable
// capacity. Averaged over the measured arrivals, as a share of all memory slices.
double SteadyStateServedBound(const MigCluster& cluster, const std::vector<Arrival>& arrivals,
                              size_t warmup) {
  // The most demand one request of each type can serve, on any GPU of the fleet.
  const IntendedCapacity intended = MeasureIntended(cluster);
  const std::vector<int64_t>& size = intended.most_demand;
  const auto usable = static_cast<double>(intended.demand);
  using Departure = std::pair<double, int64_t>;  // (time, served slices)
  std::priority_queue<Departure, std::vector<Departure>, std::greater<>> departures;
  int64_t resident = 0;
  double sum = 0;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    const Arrival& a = arrivals[i];
    while (!departures.empty() && departures.top().first <= a.time) {
      resident -= departures.top().second;
      departures.pop();
    }
    if (i >= warmup) sum += std::min(static_cast<double>(resident), usable);
    const int64_t s = size[static_cast<size_t>(a.type)];
    departures.emplace(a.time + a.lifetime, s);
    resident += s;
  }
  const size_t measured = arrivals.size() - warmup;
  const auto all = static_cast<double>(std::max<int64_t>(1, cluster.demand_capacity()));
  return sum / static_cast<double>(measured) / all;
}

// Where slices differ between GPUs (mixed-rtx; demand then counts in MiB): the most demand the
// GPUs hold, or all the stream could serve if that is less; the most requests that fit in MiB,
// smallest first.
RunMetrics SaturationOnMixedSlices(const MigCluster& cluster,
                                   const std::vector<Arrival>& arrivals) {
  RunMetrics m;
  m.arrived = static_cast<int64_t>(arrivals.size());
  const IntendedCapacity intended = MeasureIntended(cluster);
  int64_t stream = 0;
  std::vector<int64_t> sizes;
  for (const Arrival& a : arrivals) {
    stream += intended.most_demand[static_cast<size_t>(a.type)];
    const int64_t s = intended.least_mib[static_cast<size_t>(a.type)];
    if (s > 0) sizes.push_back(s);
  }
  m.served_slices = std::min(intended.demand, stream);
  m.accepted = CheapestWithin(std::move(sizes), intended.mib).first;
  m.served_ratio = static_cast<double>(m.served_slices) /
                   static_cast<double>(std::max<int64_t>(1, cluster.demand_capacity()));
  return m;
}

}  // namespace

RunMetrics UpperBoundSaturation(const MigCluster& cluster, const std::vector<Arrival>& arrivals) {
  if (!cluster.UniformSlices()) return SaturationOnMixedSlices(cluster, arrivals);
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
                   static_cast<double>(std::max<int64_t>(1, cluster.demand_capacity()));
  return m;
}

RunMetrics UpperBoundSteadyState(const MigCluster& cluster, const std::vector<Arrival>& arrivals,
                                 size_t warmup) {
  RunMetrics m;
  if (arrivals.size() <= warmup) return m;
  const double start = arrivals[warmup].time;
  const double end = arrivals.back().time;
  m.arrived = static_cast<int64_t>(arrivals.size() - warmup);
  const BoundUnits units = PodCountUnits(cluster);
  const int64_t capacity = units.capacity;
  const double budget = static_cast<double>(capacity) * (end - start);
  // Each measured request's cost: its demand times its time inside [start, end].
  const std::vector<int64_t>& by_type = units.size_by_type;
  std::vector<double> costs;
  costs.reserve(arrivals.size() - warmup);
  for (size_t i = warmup; i < arrivals.size(); ++i) {
    const int64_t s = by_type[static_cast<size_t>(arrivals[i].type)];
    if (s == 0) continue;
    costs.push_back(static_cast<double>(s) *
                    std::min(arrivals[i].lifetime, end - arrivals[i].time));
  }
  m.accepted = CheapestWithin(std::move(costs), budget).first;
  std::vector<ResidentRequest> resident;
  resident.reserve(arrivals.size() - warmup);
  for (size_t i = warmup; i < arrivals.size(); ++i) {
    const Arrival& a = arrivals[i];
    resident.push_back(
        {a.time, std::min(a.time + a.lifetime, end), by_type[static_cast<size_t>(a.type)]});
  }
  const double interval = IntervalAcceptanceBound(std::move(resident), capacity);
  if (interval >= 0) {
    m.accepted = std::min(m.accepted, static_cast<int64_t>(std::floor(interval + 1e-6)));
  }
  m.served_ratio = SteadyStateServedBound(cluster, arrivals, warmup);
  return m;
}

double PendingPlacementBound(const std::vector<WaitingRequest>& requests, int64_t capacity,
                             double start, double end) {
  if (capacity <= 0) return 0;
  const replay::GlpkEnvironment environment;
  replay::GlpkProblem lp(glp_create_prob(), &glp_delete_prob);
  glp_set_obj_dir(lp.get(), GLP_MAX);
  // Row 1: the resident ones at the end; row 2: the capacity-time of the ones gone by then;
  // one row per request that could be either, so that it counts once.
  glp_add_rows(lp.get(), 2);
  const auto cap = static_cast<double>(capacity);
  glp_set_row_bnds(lp.get(), 1, GLP_UP, 0, cap);
  glp_set_row_bnds(lp.get(), 2, GLP_UP, 0, cap * std::max(0.0, end - start));
  std::vector<int> rows{0};
  std::vector<int> cols{0};
  std::vector<double> values{0};
  int column = 0;
  auto share = [&](int row, double coefficient) {
    ++column;
    glp_add_cols(lp.get(), 1);
    glp_set_col_bnds(lp.get(), column, GLP_DB, 0, 1);
    glp_set_obj_coef(lp.get(), column, 1);
    rows.push_back(row), cols.push_back(column), values.push_back(coefficient);
  };
  for (const WaitingRequest& r : requests) {
    if (r.size <= 0 || r.size > capacity) continue;  // no GPU holds it
    const auto size = static_cast<double>(r.size);
    share(1, size);
    if (r.arrival + r.lifetime > end) continue;  // cannot be gone by the end
    const int either = glp_add_rows(lp.get(), 1);
    glp_set_row_bnds(lp.get(), either, GLP_UP, 0, 1);
    rows.push_back(either), cols.push_back(column), values.push_back(1);
    share(2, size * r.lifetime);
    rows.push_back(either), cols.push_back(column), values.push_back(1);
  }
  if (column == 0) return 0;
  if (!replay::SolveQuietly(lp.get(), rows, cols, values, /*scale=*/true)) return -1;
  return glp_get_obj_val(lp.get());
}

RunMetrics UpperBoundPendingQueue(const MigCluster& cluster, const std::vector<Arrival>& arrivals,
                                  size_t warmup) {
  // Placed on arrival, a pod holds what it would in steady state; the waiting ones only take
  // capacity away from it.
  RunMetrics m = UpperBoundSteadyState(cluster, arrivals, warmup);
  if (arrivals.size() <= warmup) return m;
  const BoundUnits units = PodCountUnits(cluster);
  std::vector<WaitingRequest> requests;
  requests.reserve(arrivals.size() - warmup);
  for (size_t i = warmup; i < arrivals.size(); ++i) {
    const Arrival& a = arrivals[i];
    requests.push_back({a.time, a.lifetime, units.size_by_type[static_cast<size_t>(a.type)]});
  }
  const double ever =
      PendingPlacementBound(requests, units.capacity, arrivals[warmup].time, arrivals.back().time);
  // A solver failure leaves the trivial bound (every measured arrival).
  m.ever_placed =
      ever < 0 ? m.arrived : std::min(m.arrived, static_cast<int64_t>(std::floor(ever + 1e-4)));
  m.accepted = std::min(m.accepted, m.ever_placed);
  m.served_ratio = UsableShare(cluster);  // pods placed after waiting add to what is served
  return m;
}

}  // namespace tessera::sim::mig_replay
