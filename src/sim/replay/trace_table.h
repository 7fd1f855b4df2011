#pragma once

// The cross-trace table of `tessera replay --pods <several>` (docs/replay.md): for each pod
// list, each policy's allocation at 130% arrived load, the published FGD figure, the LP upper
// bound and the headroom it leaves; plus the bound's own summary and per-seed rows.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/replay/report.h"
#include "sim/replay/seed_stats.h"
#include "sim/replay/upper_bound.h"

namespace tessera::sim::replay {

inline constexpr std::string_view kUpperBoundLabel = "upper-bound";
inline constexpr std::string_view kOfflinePackingLabel = "offline-packing";

struct Figure {
  std::string name;  // policy, "06-FGD" or kUpperBoundLabel
  double mean = 0;   // allocation % at 130% arrived load
  double std = 0;    // over seeds
};

struct TraceRow {
  std::string workload;
  std::vector<Figure> policies;           // in the order they ran
  std::optional<Figure> published_fgd;    // when a reference was given and has the trace
  std::optional<Figure> offline_packing;  // unless --no-bound
  std::optional<Figure> bound;            // unless --no-bound
  // tessera's allocation at 130% minus fgd's (our port), seed by seed, when both ran.
  std::optional<PairedDifference> tessera_minus_fgd;
};

// Markdown: trace | each policy | FGD (published) | tessera − FGD | [tessera − fgd, seed by
// seed |] offline packing | upper bound | headroom
// (bound − tessera, or − the best policy when tessera did not run; the seed-by-seed column when
// a row has it); a last row of means.
std::string TraceTableMarkdown(const std::vector<TraceRow>& rows);
// The same figures, one line per (trace, column): workload,column,mean,std.
std::string TraceTableCsv(const std::vector<TraceRow>& rows);

// The bound and the offline packing over seeds as summary rows (policies kUpperBoundLabel and
// kOfflinePackingLabel) at the stream's end: `arrived_pct` is 130 with the protocol's --tune.
std::vector<SummaryRow> SummarizeBounds(const std::string& workload,
                                        const std::vector<AllocationBound>& bounds,
                                        int arrived_pct = kMaxArrivedPct);
// workload,seed,gpu_alloc_pct_bound,offline_packing_pct,node_classes,pod_types,solve_seconds.
std::string BoundsCsv(const std::string& workload, const std::vector<uint64_t>& seeds,
                      const std::vector<AllocationBound>& bounds);

}  // namespace tessera::sim::replay
