#pragma once

// Mean and sample standard deviation over seeds of every metric, per (fleet, workload,
// protocol, policy), and the CSV files of the benchmark.

#include <string>
#include <vector>

#include "sim/mig_replay/benchmark.h"
#include "sim/replay/seed_stats.h"

namespace tessera::sim::mig_replay {

struct SummaryRow {
  std::string fleet;
  std::string workload;
  std::string protocol;
  std::string policy;
  int n_seeds = 0;
  // Percentages.
  MeanStd acceptance;
  MeanStd served_slices;  // intended profiles' memory slices of the pods held
  MeanStd memory_slices;
  MeanStd compute_slices;
  MeanStd gpus_in_use;
  MeanStd stranded;
  MeanStd fragmentation;
  // Pending-queue protocol only (0 elsewhere): requests ever placed, % of arrivals, and their mean
  // wait from arrival to placement, in mean lifetimes.
  MeanStd ever_placed;
  MeanStd wait;
  double wall_seconds = 0;  // mean per run (not written to summary.csv: it varies)
};

// Rows in the order the records first name each (fleet, workload, protocol, policy).
std::vector<SummaryRow> Summarize(const std::vector<RunRecord>& records);

// fleet,workload,protocol,policy,n_seeds,acceptance_pct_mean,acceptance_pct_std,... ; the same
// seeds give byte-identical text.
std::string SummaryCsv(const std::vector<SummaryRow>& rows);
// One row per run, with wall_seconds.
std::string RunsCsv(const std::vector<RunRecord>& records);
// types.csv: per (fleet, workload, protocol, policy) and request type, the requests that
// arrived, were accepted on arrival and (pending queue) were ever placed, summed over the seeds
// (RunMetrics::by_type); the bounds, which place nothing, are left out. never_placed_pct and
// wait_p95 are the type's starvation (starvation.h, pooled over the seeds): the % of its
// requests never placed (pending queue: still waiting at the end; otherwise refused on arrival)
// and, pending queue only (empty elsewhere), the nearest-rank 95th percentile of their waits in
// mean lifetimes, those never placed counted with their wait censored at the run's end.
std::string TypesCsv(const std::vector<RunRecord>& records);

// The row for the key, or nullptr.
const SummaryRow* FindRow(const std::vector<SummaryRow>& rows, const std::string& fleet,
                          const std::string& workload, const std::string& protocol,
                          const std::string& policy);

}  // namespace tessera::sim::mig_replay
