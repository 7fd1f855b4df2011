#include "sim/replay/trace_replay.h"
#include "sim/replay/defrag_policy.h"
#include "sim/replay/report_kit.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "sim/replay/progress_bar.h"
#include "sim/replay/report.h"
#include "sim/replay/runner.h"
#include "sim/replay/tessera_policy.h"
#include "sim/replay/trace_table.h"
#include "sim/replay/upper_bound.h"

namespace tessera::sim::replay {
namespace {

double MeanAt(const std::vector<SummaryRow>& rows, int pct, double* std_out) {
  for (const auto& r : rows) {
    if (r.metric == kMetricAllocation && r.arrived_pct == pct) {
      *std_out = r.std;
      return r.mean;
    }
  }
  *std_out = NAN;
  return NAN;
}

// The run's allocation ratio at kMaxArrivedPct, as the summary averages it; NaN without a
// sample. Per seed, so that two policies can be compared seed by seed (they replay the same pods).
double AllocationAtMaxLoad(const RunSeries& series) {
  if (series.gpu_alloc_pct.size() <= static_cast<size_t>(kMaxArrivedPct)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return series.gpu_alloc_pct[kMaxArrivedPct];
}

std::string RunsCsv(const std::string& workload, const std::vector<PolicyRuns>& policies) {
  CsvWriter csv({"workload", "policy", "seed", "pods", "scheduled", "failed_cpu_only",
                 "failed_sharing", "failed_one_gpu", "failed_multi_gpu", "gpu_alloc_pct_at_130",
                 "wall_seconds", "decision_p99_us", "decision_p50_us"});
  for (const auto& p : policies) {
    for (const auto& r : p.runs) {
      csv.Row({workload, p.policy, std::to_string(r.seed), std::to_string(r.pods),
               std::to_string(r.scheduled), std::to_string(r.failed_by_kind[0]),
               std::to_string(r.failed_by_kind[1]), std::to_string(r.failed_by_kind[2]),
               std::to_string(r.failed_by_kind[3]), FormatFixed(AllocationAtMaxLoad(r.series), 2),
               FormatFixed(r.wall_seconds, 4), FormatFixed(r.decision_p99_us, 2),
               FormatFixed(r.decision_p50_us, 2)});
    }
  }
  return csv.text();
}

// tessera's allocation at 130% minus fgd's, seed by seed; nullopt unless both ran.
std::optional<PairedDifference> TesseraMinusFgd(const std::vector<PolicyRuns>& policies) {
  const std::vector<SeedResult>* tessera = nullptr;
  const std::vector<SeedResult>* fgd = nullptr;
  for (const PolicyRuns& p : policies) {
    if (p.policy == "tessera") tessera = &p.runs;
    if (p.policy == "fgd") fgd = &p.runs;
  }
  if (tessera == nullptr || fgd == nullptr) return std::nullopt;
  std::vector<double> a;
  std::vector<double> b;
  for (const SeedResult& t : *tessera) {
    for (const SeedResult& f : *fgd) {
      if (f.seed != t.seed) continue;
      a.push_back(AllocationAtMaxLoad(f.series));
      b.push_back(AllocationAtMaxLoad(t.series));
    }
  }
  return PairedMeanDifference(a, b);
}

// One trace: the per-policy table, the bound, the files under `out_dir` (none when empty).
Result<TraceRow> ReplayOneTrace(const TraceReplayOptions& o, const std::vector<TraceNode>& nodes,
                                const std::string& pods_csv,
                                const std::vector<SummaryRow>& published,
                                const std::string& out_dir) {
  const std::vector<uint64_t>& seeds = o.seeds;
  auto pods = LoadTracePods(pods_csv);
  if (!pods.ok()) return pods.error();
  const TieBreak tie_break = o.tie_break;
  PolicyFactories extra;
  extra["tessera"] = [](const TargetWorkload&) { return MakeTesseraPolicy(); };
  extra["tessera-prior"] = [](const TargetWorkload& m) { return MakeTesseraPolicy(&m); };
  for (const sched::NodePolicy& node_policy : o.node_policies) {
    extra[TesseraPolicyName(node_policy)] = [node_policy](const TargetWorkload&) {
      return MakeTesseraPolicy(nullptr, node_policy);
    };
  }
  for (const std::string& policy : o.policies) {
    if (const int n = TesseraDefragEvictionsOf(policy); n > 0) {
      extra[policy] = [n](const TargetWorkload&) { return MakeTesseraDefragPolicy(n); };
    }
  }
  const std::string workload = WorkloadName(pods_csv);
  const bool tty = isatty(STDERR_FILENO) != 0;

  TraceRow row;
  row.workload = workload;
  HtmlReportInput html;
  html.title = "tessera replay: " + workload;
  html.workload = workload;
  html.published = published;
  std::vector<SummaryRow> all_rows;
  std::printf("\n%s\n", workload.c_str());
  // The policy column fits the longest name ("tessera:NAME" for an operator's node policy).
  int name_width = 14;
  for (const auto& policy : o.policies) {
    name_width = std::max(name_width, static_cast<int>(policy.size()));
  }
  std::printf("%-*s %8s %16s %16s %10s %10s %10s %9s %9s\n", name_width, "policy", "seeds",
              "alloc@100%", "alloc@130%", "failed", "s/run", "pods/s", "p50 us", "p99 us");
  for (const auto& policy : o.policies) {
    ProgressBar bar(tty);
    ProgressFn progress = [&](int done, int total) { bar.Draw(policy, done, total); };
    auto runs =
        RunReplay(nodes, pods.value(), policy, seeds, o.tune, o.jobs, &extra, progress, tie_break);
    bar.Clear();
    if (!runs.ok()) return runs.error();
    auto rows = Summarize(workload, PublishedPolicyLabel(policy), runs.value());
    double s100 = 0;
    double s130 = 0;
    double m100 = MeanAt(rows, 100, &s100);
    double m130 = MeanAt(rows, 130, &s130);
    double failed = 0;
    double wall = 0;
    double pods_total = 0;
    double p50 = 0;
    double p99 = 0;
    for (const auto& r : runs.value()) {
      failed += static_cast<double>(r.failed());
      wall += r.wall_seconds;
      pods_total += static_cast<double>(r.pods);
      p50 = std::max(p50, r.decision_p50_us);
      p99 = std::max(p99, r.decision_p99_us);
    }
    const double n = static_cast<double>(runs->size());
    // Per-pod decision latency (the policy's choice and its placement): the largest over seeds.
    std::printf("%-*s %8zu %9.2f ± %4.2f %9.2f ± %4.2f %10.0f %10.3f %10.0f %9.1f %9.1f\n",
                name_width, policy.c_str(), runs->size(), m100, s100, m130, s130, failed / n,
                wall / n, wall > 0 ? pods_total / wall : 0.0, p50, p99);
    if (TesseraDefragEvictionsOf(policy) > 0) {
      double evictions = 0;
      for (const auto& r : runs.value()) evictions += static_cast<double>(r.evictions);
      std::printf("%-*s %8s evictions per run: %.0f\n", name_width, "", "", evictions / n);
    }
    row.policies.push_back({policy, m130, s130});
    all_rows.insert(all_rows.end(), rows.begin(), rows.end());
    html.policies.push_back(PolicyRuns{policy, std::move(runs.value())});
  }

  if (auto paired = TesseraMinusFgd(html.policies); paired && paired->n > 0) {
    row.tessera_minus_fgd = paired;
    if (paired->n > 1) {
      std::printf("%-*s %8d %16s %+9.2f ± %4.2f   (seed by seed, 95%% interval)\n", name_width,
                  "tessera - fgd", paired->n, "", paired->mean, paired->half_width_95);
    } else {
      std::printf("%-*s %8d %16s %+9.2f\n", name_width, "tessera - fgd", paired->n, "",
                  paired->mean);
    }
  }

  std::vector<AllocationBound> bounds;
  if (!o.skip_bound) {
    auto solved = UpperBoundPerSeed(nodes, pods.value(), seeds, o.tune);
    if (!solved.ok()) return Error{workload + ": " + solved.error().message};
    bounds = std::move(solved.value());
    // The stream ends at --tune x the capacity (130%); the bound is for that point.
    const int end_pct = o.tune > 0 ? static_cast<int>(std::lround(o.tune * 100)) : kMaxArrivedPct;
    const std::vector<SummaryRow> bound_rows = SummarizeBounds(workload, bounds, end_pct);
    row.bound = {std::string(kUpperBoundLabel), bound_rows[0].mean, bound_rows[0].std};
    row.offline_packing = {std::string(kOfflinePackingLabel), bound_rows[1].mean,
                           bound_rows[1].std};
    all_rows.insert(all_rows.end(), bound_rows.begin(), bound_rows.end());
    double solve = 0;
    for (const auto& b : bounds) solve += b.solve_seconds;
    std::printf("%-*s %8zu %16s %9.2f ± %4.2f   (best-fit decreasing, knowing every pod)\n",
                name_width, std::string(kOfflinePackingLabel).c_str(), bounds.size(), "",
                bound_rows[1].mean, bound_rows[1].std);
    std::printf("%-*s %8zu %16s %9.2f ± %4.2f %10s %10.3f   (LP: %d node classes, %d pod types)\n",
                name_width, std::string(kUpperBoundLabel).c_str(), bounds.size(), "",
                bound_rows[0].mean, bound_rows[0].std, "",
                solve / static_cast<double>(bounds.size()), bounds.front().node_classes,
                bounds.front().pod_types);
  }
  if (!published.empty()) {
    std::printf("published:\n");
    for (const auto& label :
         {"01-Random", "02-DotProd", "03-GpuClustering", "04-GpuPacking", "05-BestFit", "06-FGD"}) {
      const SummaryRow* a = FindSummaryRow(published, workload, label, kMetricAllocation, 100);
      const SummaryRow* b = FindSummaryRow(published, workload, label, kMetricAllocation, 130);
      if (a == nullptr || b == nullptr) continue;
      std::printf("%-16s %6s %9.2f ± %4.2f %9.2f ± %4.2f\n", label, "", a->mean, a->std, b->mean,
                  b->std);
    }
    if (const SummaryRow* fgd =
            FindSummaryRow(published, workload, "06-FGD", kMetricAllocation, 130)) {
      row.published_fgd = {"06-FGD", fgd->mean, fgd->std};
    }
  }
  if (!out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) return Error{out_dir + ": " + ec.message()};
    std::ofstream(out_dir + "/summary.csv") << SummaryCsv(all_rows);
    std::ofstream(out_dir + "/report.html") << RenderHtmlReport(html);
    std::ofstream(out_dir + "/runs.csv") << RunsCsv(workload, html.policies);
    if (!bounds.empty())
      std::ofstream(out_dir + "/bounds.csv") << BoundsCsv(workload, seeds, bounds);
    std::printf("wrote %s/summary.csv, runs.csv%s, report.html\n", out_dir.c_str(),
                bounds.empty() ? "" : ", bounds.csv");
  }
  return row;
}

}  // namespace

Status ReplayTraces(const TraceReplayOptions& o) {
  auto nodes = LoadTraceNodes(o.nodes_csv);
  if (!nodes.ok()) return nodes.error();
  auto pod_lists = ExpandPodLists(o.pods_csv);
  if (!pod_lists.ok()) return pod_lists.error();
  std::vector<SummaryRow> published;
  if (!o.reference_csv.empty()) {
    auto ref = LoadSummaryCsv(o.reference_csv);
    if (!ref.ok()) return ref.error();
    published = std::move(ref.value());
  }
  // One pod list writes its files into --out; several write one folder each and a table.
  const bool several = pod_lists->size() > 1;
  std::vector<TraceRow> table;
  for (const std::string& pods_csv : pod_lists.value()) {
    const std::string out_dir =
        o.out_dir.empty() || !several ? o.out_dir : o.out_dir + "/" + WorkloadName(pods_csv);
    auto row = ReplayOneTrace(o, nodes.value(), pods_csv, published, out_dir);
    if (!row.ok()) return row.error();
    table.push_back(std::move(row.value()));
  }
  if (several) {
    const std::string markdown = TraceTableMarkdown(table);
    std::printf("\nallocation %% at 130%% arrived load, mean ± std over %zu seeds:\n\n%s",
                o.seeds.size(), markdown.c_str());
    if (!o.out_dir.empty()) {
      std::ofstream(o.out_dir + "/traces.md") << markdown;
      std::ofstream(o.out_dir + "/traces.csv") << TraceTableCsv(table);
      std::printf("\nwrote %s/traces.md, traces.csv and one folder per trace\n", o.out_dir.c_str());
    }
  }
  return Status::Ok();
}

}  // namespace tessera::sim::replay
