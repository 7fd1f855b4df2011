#include "sim/mig_replay/benchmark.h"
#include "sim/replay/parallel.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "sim/mig_replay/defrag_replay.h"
#include "sim/mig_replay/geometry_free.h"
#include "sim/mig_replay/offline_guided.h"
#include "sim/mig_replay/placement_bound.h"
#include "sim/mig_replay/upper_bound.h"

namespace tessera::sim::mig_replay {

using replay::ForEachInParallel;
namespace {

using Clock = std::chrono::steady_clock;

// The run's random stream: the seed alone decides the arrivals, so that every policy of a cell
// (and the reference and the bound) sees the same sequence.
std::mt19937_64 ArrivalStream(uint64_t seed) { return std::mt19937_64(seed); }

struct Task {
  size_t fleet = 0;
  size_t workload = 0;
  size_t protocol = 0;
  std::string policy;
  uint64_t seed = 0;
};

}  // namespace

std::string Protocol::Name() const {
  if (!steady) return "saturation";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%s-%.2g", pending ? "pending" : "steady", load);
  return buf;
}

bool RunsOn(const FleetSpec& fleet, const Workload& workload, const mig::GpuModelCatalog& catalog) {
  if (NamesMemory(workload)) return true;
  uint32_t compute_slices = 0;
  for (const auto& name : fleet.models) {
    const mig::GpuModelSpec* spec = catalog.Find(name);
    if (spec == nullptr) continue;  // BuildFleetNodes names it
    if (compute_slices != 0 && spec->compute_slices != compute_slices) return false;
    compute_slices = spec->compute_slices;
  }
  return true;
}

Result<NamedPlacer> MakePlacer(const std::string& policy, MigCluster& cluster,
                               std::span<const sched::NodePolicy> node_policies) {
  NamedPlacer out;
  if (policy == kReferencePooledSlices) {
    out.placer = std::make_unique<GeometryFreePlacer>(cluster);
    return out;
  }
  auto made = MakeMigPolicy(policy, cluster, node_policies);
  if (!made.ok()) return made.error();
  out.policy = std::move(made.value());
  out.placer = std::make_unique<PolicyPlacer>(cluster, *out.policy);
  return out;
}

Result<RunRecord> RunOne(const std::vector<model::Node>& nodes, const std::string& fleet,
                         const Workload& workload, const Protocol& protocol,
                         const std::string& policy, uint64_t seed,
                         const BenchmarkOptions& options) {
  const auto start = Clock::now();
  MigCluster cluster(nodes, workload);
  const double share = ExpectedGpuShare(cluster);
  std::mt19937_64 rng = ArrivalStream(seed);
  std::vector<Arrival> arrivals;
  size_t warmup = 0;
  if (!protocol.steady) {
    const auto n =
        static_cast<size_t>(std::ceil(options.stream_factor * cluster.gpu_count() / share));
    arrivals = SampleArrivals(workload, n, rng);
  } else {
    // Offered load = expected occupied slices / all slices = rate * mean lifetime * share / GPUs.
    const double rate = protocol.load * cluster.gpu_count() / share;
    warmup = static_cast<size_t>(std::ceil(options.warmup_lifetimes * rate));
    const auto measured = static_cast<size_t>(std::ceil(options.measure_lifetimes * rate));
    arrivals = SamplePoissonArrivals(workload, warmup + measured, rate, rng);
  }

  RunRecord r;
  r.fleet = fleet;
  r.workload = workload.name;
  r.protocol = protocol.Name();
  r.policy = policy;
  r.seed = seed;
  for (const RequestType& type : workload.types) r.type_labels.push_back(type.label);
  if (policy == kUpperBound) {  // computed from the arrivals, nothing placed
    r.metrics = protocol.pending  ? UpperBoundPendingQueue(cluster, arrivals, warmup)
                : protocol.steady ? UpperBoundSteadyState(cluster, arrivals, warmup)
                                  : UpperBoundSaturation(cluster, arrivals);
    r.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return r;
  }
  if (policy == kPlacementBound) {  // the LP, nothing placed; RunBenchmark skips pending
    r.metrics = protocol.steady ? PlacementBoundSteadyState(cluster, arrivals, warmup)
                                : PlacementBoundSaturation(cluster, arrivals);
    r.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return r;
  }
  if (policy == kOfflineLpGuided) {  // tessera, told by the placement LP whom to turn away
    auto guided = RunOfflineLpGuided(nodes, workload, arrivals, warmup, protocol.steady,
                                     options.node_policies, options.offline_guide);
    if (!guided.ok()) {
      return Error{"fleet " + fleet + ", policy " + policy + ", seed " + std::to_string(seed) +
                   ": " + guided.error().message};
    }
    r.metrics = std::move(guided.value());
    r.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return r;
  }
  // tessera with defragmentation places as tessera; the rounds come on top.
  const std::optional<int> defrag_budget = DefragPolicyBudget(policy);
  if (defrag_budget && !protocol.pending) {
    return Error{"policy " + policy +
                 ": defragmentation runs under the pending-queue protocol only"};
  }
  auto made = MakePlacer(defrag_budget ? std::string(kPolicyTessera) : policy, cluster,
                         options.node_policies);
  if (!made.ok()) return Error{"fleet " + fleet + ": " + made.error().message};
  Placer* placer = made->placer.get();
  std::unique_ptr<Defragmenter> defragmenter;
  DefragSchedule schedule;
  if (defrag_budget) {
    auto defrag = MakeTesseraDefragmenter(cluster);
    if (!defrag.ok()) return Error{"fleet " + fleet + ": " + defrag.error().message};
    defragmenter = std::move(defrag.value());
    schedule = MakeDefragSchedule(*defrag_budget, options.defrag_interval_minutes,
                                  options.mean_lifetime_minutes);
  }
  if (protocol.pending) {
    r.metrics = RunPendingQueue(*placer, arrivals, warmup, true, defragmenter.get(), schedule);
  } else if (protocol.steady) {
    r.metrics = RunSteadyState(*placer, arrivals, warmup);
  } else {
    r.metrics = RunSaturation(*placer, arrivals, options.stop_after_rejections);
  }
  if (const std::optional<Error> failed = placer->error()) {
    return Error{"fleet " + fleet + ", policy " + policy + ", seed " + std::to_string(seed) + ": " +
                 failed->message};
  }
  r.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

Result<std::vector<RunRecord>> RunBenchmark(const BenchmarkOptions& options,
                                            const mig::GpuModelCatalog& catalog,
                                            const ProgressFn& progress) {
  std::vector<std::vector<model::Node>> fleet_nodes;
  for (const auto& name : options.fleets) {
    const FleetSpec* spec = FindFleet(name);
    if (spec == nullptr) return Error{"unknown fleet \"" + name + "\""};
    auto nodes = BuildFleetNodes(*spec, options.nodes_per_fleet, catalog);
    if (!nodes.ok()) return nodes.error();
    fleet_nodes.push_back(std::move(nodes.value()));
  }
  std::vector<int> fleet_gpus;  // per fleet, for placement-bound
  for (size_t f = 0; f < fleet_nodes.size(); ++f) {
    fleet_gpus.push_back(static_cast<int>(fleet_nodes[f].size()) *
                         FindFleet(options.fleets[f])->gpus_per_node);
  }
  std::vector<Protocol> protocols;
  if (options.saturation) protocols.push_back(Protocol{false, 0});
  for (double load : options.loads) protocols.push_back(Protocol{true, load, false});
  if (options.pending_queue) {
    for (double load : options.loads) protocols.push_back(Protocol{true, load, true});
  }
  std::vector<std::string> policies = options.policies;
  policies.emplace_back(kReferencePooledSlices);
  policies.emplace_back(kUpperBound);

  std::vector<Task> tasks;
  for (size_t f = 0; f < options.fleets.size(); ++f) {
    for (size_t w = 0; w < options.workloads.size(); ++w) {
      if (!RunsOn(*FindFleet(options.fleets[f]), options.workloads[w], catalog)) continue;
      for (size_t p = 0; p < protocols.size(); ++p) {
        for (const auto& policy : policies) {
          if (DefragPolicyBudget(policy) && !protocols[p].pending) continue;
          for (uint64_t seed : options.seeds) tasks.push_back(Task{f, w, p, policy, seed});
        }
        if (protocols[p].pending || fleet_gpus[f] > options.placement_bound_max_gpus) continue;
        for (uint64_t seed : options.seeds) {
          tasks.push_back(Task{f, w, p, std::string(kPlacementBound), seed});
          tasks.push_back(Task{f, w, p, std::string(kOfflineLpGuided), seed});
        }
      }
    }
  }

  std::vector<std::optional<Result<RunRecord>>> results(tasks.size());
  std::mutex progress_mutex;
  int done = 0;
  ForEachInParallel(tasks.size(), options.jobs, [&](size_t i) {
    const Task& t = tasks[i];
    results[i] =
        RunOne(fleet_nodes[t.fleet], options.fleets[t.fleet], options.workloads[t.workload],
               protocols[t.protocol], t.policy, t.seed, options);
    if (progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      progress(++done, static_cast<int>(tasks.size()));
    }
  });

  std::vector<RunRecord> out;
  out.reserve(tasks.size());
  for (auto& r : results) {
    if (!r->ok()) return r->error();
    out.push_back(std::move(r->value()));
  }
  return out;
}

}  // namespace tessera::sim::mig_replay
