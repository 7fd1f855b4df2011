#pragma once

// The defragmentation planner (sched::PlanDefrag) in the MIG benchmark's pending-queue protocol
// (docs/defrag.md, "Measured in the simulator"): the policy "tessera+defrag-N" is tessera with a
// defragmentation round every few simulated minutes, at most N evictions per simulated hour.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "sim/mig_replay/benchmark.h"
#include "sim/mig_replay/cluster.h"
#include "sim/mig_replay/protocol.h"

namespace tessera::sim::mig_replay {

inline constexpr std::string_view kDefragPolicyPrefix = "tessera+defrag-";

// "tessera+defrag-N".
std::string DefragPolicyName(int evictions_per_hour);
// N of a name DefragPolicyName made, or nullopt for any other name.
std::optional<int> DefragPolicyBudget(std::string_view policy);

// The round's schedule for `evictions_per_hour`, with a mean lifetime of
// `mean_lifetime_minutes` and a round every `interval_minutes` (the protocol's time is in mean
// lifetimes).
DefragSchedule MakeDefragSchedule(int evictions_per_hour, double interval_minutes,
                                  double mean_lifetime_minutes);

// Plans with sched::PlanDefrag on the cluster's state, the waiting requests pending (tessera's
// pods, as the `tessera` policy builds them), admitting pending pods only (mode (a); no moves
// that only raise placeability), and commits the plan's own reservations: for each admitted
// pod, its evicted pods leave, it takes their room and they are placed again where the plan
// placed them. Nothing changes between the plan and its execution, so every step is honoured.
Result<std::unique_ptr<Defragmenter>> MakeTesseraDefragmenter(MigCluster& cluster);

// The nearest-rank 95th percentile of a run's waits (every measured arrival, those never placed
// censored at the run's end; RunMetrics::waits_by_type pooled), in mean lifetimes; 0 when none.
double WaitP95(const RunMetrics& metrics);

// A Markdown table, per fleet, workload, protocol and "tessera+defrag-N" policy, of what
// defragmentation changed against `tessera` on the same seeds (paired): evictions and pods
// admitted per hour, demand served, mean and p95 pending wait (in minutes, a mean lifetime
// being `mean_lifetime_minutes`), and the memory slice-hours served gained per eviction. Empty
// when no record is of such a policy.
std::string DefragTableMarkdown(const std::vector<RunRecord>& records,
                                double mean_lifetime_minutes);

}  // namespace tessera::sim::mig_replay
