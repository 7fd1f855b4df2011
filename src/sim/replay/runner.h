#pragma once

// Runs the FGD paper's replay for one trace and one policy over several seeds:
//   pods -> Inflate (shuffle + tune to 1.3x GPU capacity) -> place one pod at a time in that
//   order, no departures, a pod that does not fit stays unplaced -> sample the metrics after
//   every pod (as the simulator's ClusterGpuFragReport does).
// Each seed owns its random stream (std::mt19937_64 seeded with the seed; it draws the workload,
// then the scheduler's node order, then any draw a policy makes), its cluster and its policy,
// so the results do not depend on how many seeds run at once.

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "sim/replay/metrics.h"
#include "sim/replay/policy.h"
#include "sim/replay/trace.h"

namespace tessera::sim::replay {

struct SeedResult {
  uint64_t seed = 0;
  std::string policy;
  int64_t pods = 0;                                     // replayed, after inflation
  int64_t scheduled = 0;                                // placed
  std::array<int64_t, kPodKindCount> failed_by_kind{};  // indexed by PodKind
  RunSeries series;
  double wall_seconds = 0;     // the whole run: inflation, placement, metrics
  double decision_p50_us = 0;  // median of one pod's decision (Choose + Allocate + metrics)
  double decision_p99_us = 0;  // its 99th percentile
  int64_t evictions = 0;       // running pods a defragmenting policy moved

  int64_t failed() const {
    int64_t total = 0;
    for (int64_t n : failed_by_kind) total += n;
    return total;
  }
};

// Progress of RunReplay in steps: every seed contributes kProgressStepsPerSeed steps (one per
// 1% of its pods). Called with (done, total) from the worker threads, one call at a time.
inline constexpr int kProgressStepsPerSeed = 100;
using ProgressFn = std::function<void(int done, int total)>;

// The pod key of the i-th replayed pod (in the PlacementState).
std::string TraceArrivalKey(size_t i);

// One replay per seed with `jobs` threads (<= 0: one per hardware thread). M is built from
// `pods` as given (the original trace). Results come back in the order of `seeds`. Policies
// are made, one per seed, in the calling thread.
Result<std::vector<SeedResult>> RunReplay(const std::vector<TraceNode>& nodes,
                                          const std::vector<TracePod>& pods,
                                          std::string_view policy,
                                          const std::vector<uint64_t>& seeds, double tune = 1.3,
                                          int jobs = 1, const PolicyFactories* extra = nullptr,
                                          const ProgressFn& progress = {},
                                          TieBreak tie_break = TieBreak::kFirstInNodeOrder);

// One seed with a given policy instance, in the calling thread. `on_percent` (optional) is
// called with 1..100 as the replay passes each percent of its pods.
Result<SeedResult> RunSeed(const std::vector<TraceNode>& nodes, const TargetWorkload& target,
                           const std::vector<TracePod>& pods, Policy& policy, uint64_t seed,
                           double tune, const std::function<void(int)>& on_percent = {},
                           TieBreak tie_break = TieBreak::kFirstInNodeOrder);

}  // namespace tessera::sim::replay
