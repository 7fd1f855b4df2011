#pragma once

// Starvation per request type (issue 39): of each request type's pods, the fraction never placed
// and the 95th percentile of their wait, pooled over a cell's seeds. In the pending-queue
// protocol a pod is never placed when it still waits at the end of the run, and its wait is
// censored there (RunMetrics::waits_by_type), so that starvation cannot hide in the percentile;
// in saturation and steady state a pod is never placed when it is refused on arrival, and no wait
// is defined.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/mig_replay/benchmark.h"

namespace tessera::sim::mig_replay {

struct TypeStarvation {
  std::string label;
  int64_t arrived = 0;       // measured arrivals, summed over the seeds
  int64_t never_placed = 0;  // pending: not placed by the run's end; else: refused on arrival
  double never_placed_pct = 0;
  bool has_wait = false;  // pending-queue protocol only
  double wait_p95 = 0;    // mean lifetimes, nearest rank over the pooled waits; 0 without waits
};

// The nearest-rank percentile `p` (in (0, 100]) of `values`: the smallest value with at least
// p% of the values at or below it, i.e. sorted[ceil(p / 100 * n) - 1]; 0 for no values.
double NearestRankPercentile(std::vector<double> values, double p);

// Whether the protocol name is the pending-queue protocol's ("pending-0.9").
bool IsPendingProtocol(const std::string& protocol);

// Per request type of the first run, pooled over `runs` (the seeds of one cell: same fleet,
// workload, protocol and policy). Runs without per-type counts (the bounds) are skipped; empty
// when none has them.
std::vector<TypeStarvation> PooledStarvation(std::span<const RunRecord* const> runs);

// PooledStarvation of the records of one (fleet, workload, protocol, policy).
std::vector<TypeStarvation> StarvationByType(const std::vector<RunRecord>& records,
                                             const std::string& fleet, const std::string& workload,
                                             const std::string& protocol,
                                             const std::string& policy);

// The largest never_placed_pct over the cell's request types that arrived; 0 when none did.
double WorstNeverPlacedPct(const std::vector<RunRecord>& records, const std::string& fleet,
                           const std::string& workload, const std::string& protocol,
                           const std::string& policy);

}  // namespace tessera::sim::mig_replay
