#pragma once

// Replay reports: the summary CSV in the shape of the published FGD results
// (shared/data/alibaba-gpu-v2023/fgd_expected_summary.csv) and a self-contained HTML page.

#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "sim/replay/runner.h"
#include "sim/replay/seed_stats.h"

namespace tessera::sim::replay {

// One line of the summary CSV: workload,policy,metric,arrived_pct,mean,std,n_seeds.
struct SummaryRow {
  std::string workload;  // the pod list's file stem, e.g. openb_pod_list_default
  std::string policy;    // as published ("05-BestFit"), or our own name for other policies
  std::string metric;    // one of kSummaryMetrics
  int arrived_pct = 0;
  double mean = 0;
  double std = 0;  // sample standard deviation over seeds (0 for one seed)
  int n_seeds = 0;
};

inline constexpr std::string_view kMetricAllocation = "gpu_alloc_ratio_pct";
inline constexpr std::string_view kMetricFragAmount = "frag_amount_pct_of_capacity";
inline constexpr std::string_view kMetricFragRatio = "frag_ratio_pct_of_idle";

// "bestfit" -> "05-BestFit" and so on for the built-in policies; other names are unchanged.
std::string PublishedPolicyLabel(std::string_view policy);
// The workload name of a pod list path: its file name without directory and ".csv".
std::string WorkloadName(std::string_view pod_csv_path);

// Mean, sample std and count over seeds of the three metrics at arrived load 0, step, ..., 130
// (points no seed has are left out).
std::vector<SummaryRow> Summarize(std::string_view workload, std::string_view policy_label,
                                  const std::vector<SeedResult>& runs, int step_pct = 5);
std::string SummaryCsv(const std::vector<SummaryRow>& rows);  // header included
Result<std::vector<SummaryRow>> ParseSummaryCsv(std::string_view text, std::string_view source);
Result<std::vector<SummaryRow>> LoadSummaryCsv(const std::string& path);
// The row for (workload, policy label, metric, arrived_pct), or nullptr.
const SummaryRow* FindSummaryRow(const std::vector<SummaryRow>& rows, std::string_view workload,
                                 std::string_view policy, std::string_view metric, int arrived_pct);

struct PolicyRuns {
  std::string policy;  // our name, e.g. "bestfit"
  std::vector<SeedResult> runs;
};

struct HtmlReportInput {
  std::string title;
  std::string workload;
  std::vector<PolicyRuns> policies;
  // Published rows to draw dashed and to compare with; empty for none (see LoadSummaryCsv).
  std::vector<SummaryRow> published;
};

// A self-contained page: inline SVG charts of allocation ratio, fragmentation amount and
// fragmentation ratio against arrived load (ours solid, published dashed), a table of the
// allocation at 100% and 130% (mean +- std against the published mean +- std) and the failed
// pods by type.
std::string RenderHtmlReport(const HtmlReportInput& input);

}  // namespace tessera::sim::replay
