#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/sched/node_policy.h"
#include "sim/replay/cluster.h"

namespace tessera::sim::replay {

// `tessera replay` (docs/replay.md): the FGD paper's protocol on one or several traces.
struct TraceReplayOptions {
  std::string nodes_csv;
  // Pod list CSVs; a directory stands for every *pod_list*.csv in it.
  std::vector<std::string> pods_csv;
  std::vector<std::string> policies;
  std::vector<uint64_t> seeds;
  double tune = 1.3;
  std::string out_dir;  // empty: no files
  int jobs = 1;
  std::string reference_csv;  // published summary to compare with; optional
  TieBreak tie_break = TieBreak::kFirstInNodeOrder;
  bool skip_bound = false;  // no LP upper bound
  // Operators' node policies: each is the replay policy "tessera:NAME" (docs/replay.md).
  std::vector<sched::NodePolicy> node_policies;
};

// Replays every trace with every policy and seed: prints each trace's table (and, for several
// traces, the cross-trace table) on stdout, with a progress bar on a terminal's stderr; writes
// summary.csv, runs.csv, bounds.csv and report.html per trace (one folder each when there are
// several, with traces.md and traces.csv) under out_dir.
Status ReplayTraces(const TraceReplayOptions& options);

}  // namespace tessera::sim::replay
