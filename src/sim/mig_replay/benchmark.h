#pragma once

// The whole MIG benchmark: fleets x workloads x protocols (saturation; steady state, and steady
// state with a pending queue, at each offered load) x policies (and the pooled-slices reference
// and, where it is defined, the upper bound) x seeds. Every run builds its own MigCluster and
// draws its arrivals from its seed alone, so results do not depend on --jobs.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/mig/catalog.h"
#include "sim/mig_replay/demand.h"
#include "sim/mig_replay/fleet.h"
#include "sim/mig_replay/offline_guided.h"
#include "sim/mig_replay/policy.h"
#include "sim/mig_replay/protocol.h"

namespace tessera::sim::mig_replay {

struct BenchmarkOptions {
  std::vector<std::string> fleets;    // FleetSpec names
  std::vector<Workload> workloads;    // synthetic mixes, and openb when a trace is given
  std::vector<std::string> policies;  // MigPolicy names; the bound is always added
  std::vector<uint64_t> seeds = {42, 43, 44, 45, 46};
  int nodes_per_fleet = 16;
  bool saturation = true;
  std::vector<double> loads = {0.6, 0.9, 1.2};  // steady state: offered load per cell
  bool pending_queue = true;                    // also protocol (c) at each of `loads`
  double stream_factor = 1.5;       // protocol (a): requests worth 1.5x the cluster's slices
  int stop_after_rejections = 100;  // protocol (a): consecutive rejections that end a run
  double warmup_lifetimes = 3;      // protocol (b): arrivals in 3 mean lifetimes fill the cluster
  double measure_lifetimes = 5;     // protocol (b): then 5 mean lifetimes are measured
  int jobs = 1;
  // Fleets of at most this many GPUs also get placement-bound (protocols a and b; its LP grows
  // with the stream, which grows with the fleet); 0: never.
  int placement_bound_max_gpus = 16;
  // The search of offline-lp-guided, which runs beside placement-bound.
  OfflineGuideOptions offline_guide;
  // Operators' node policies, run as the policies "tessera:NAME" named in `policies`.
  std::vector<sched::NodePolicy> node_policies;
  // Policies "tessera+defrag-N" (defrag_replay.h), run under the pending-queue protocol only: a
  // defragmentation round every `defrag_interval_minutes`, a mean lifetime taken as
  // `mean_lifetime_minutes`.
  double defrag_interval_minutes = 10;
  double mean_lifetime_minutes = 60;
};

// One protocol of a cell: saturation (load 0), or steady state at an offered load, with refused
// pods dropped (b) or kept waiting (c, `pending`).
struct Protocol {
  bool steady = false;
  double load = 0;
  bool pending = false;
  std::string Name() const;  // "saturation", "steady-0.9", "pending-0.9"
};

// Whether the benchmark runs `workload` on `fleet`: a share of a GPU means the same on every
// model only when all have the same compute slices; memory requests run anywhere.
bool RunsOn(const FleetSpec& fleet, const Workload& workload, const mig::GpuModelCatalog& catalog);

struct RunRecord {
  std::string fleet;
  std::string workload;
  std::string protocol;
  std::string policy;  // or kReferencePooledSlices, kUpperBound, kPlacementBound
  uint64_t seed = 0;
  RunMetrics metrics;
  std::vector<std::string> type_labels;  // the workload's request types (metrics.by_type)
  double wall_seconds = 0;
};

// Called with (runs done, runs in all) from worker threads, one call at a time.
using ProgressFn = std::function<void(int done, int total)>;

// Runs every (fleet, workload, protocol, policy, seed) where the workload RunsOn the fleet;
// records come back in that order.
Result<std::vector<RunRecord>> RunBenchmark(const BenchmarkOptions& options,
                                            const mig::GpuModelCatalog& catalog,
                                            const ProgressFn& progress = {});

// What places a run's pods: a MigPolicy by name, or the pooled-slices reference (no policy).
struct NamedPlacer {
  std::unique_ptr<MigPolicy> policy;
  std::unique_ptr<Placer> placer;
};
Result<NamedPlacer> MakePlacer(const std::string& policy, MigCluster& cluster,
                               std::span<const sched::NodePolicy> node_policies = {});

// One run, in the calling thread (exposed for tests).
Result<RunRecord> RunOne(const std::vector<model::Node>& nodes, const std::string& fleet,
                         const Workload& workload, const Protocol& protocol,
                         const std::string& policy, uint64_t seed, const BenchmarkOptions& options);

}  // namespace tessera::sim::mig_replay
