#pragma once

// The benchmark's HTML page: inline SVG bar charts of every cell (tessera against every
// baseline and the geometry-free bound), the tables behind them, and the offline-optimum study.

#include <string>
#include <vector>

#include "sim/mig_replay/headline.h"
#include "sim/mig_replay/optimum_study.h"
#include "sim/mig_replay/summary.h"

namespace tessera::sim::mig_replay {

struct MigReportInput {
  std::string title;
  std::vector<std::string> notes;     // shown under the title (skipped workloads, parameters)
  std::vector<std::string> policies;  // in column order; the bound comes last
  std::vector<SummaryRow> rows;
  // tessera against the best baseline per cell: drawn first, as differences (not bars from 0%).
  std::vector<HeadlineRow> headline;
  std::vector<OptimumCase> optimum;  // may be empty
};

std::string RenderMigHtmlReport(const MigReportInput& input);

}  // namespace tessera::sim::mig_replay
