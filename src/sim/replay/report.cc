#include "sim/replay/report.h"
#include "core/common/strings.h"
#include "sim/replay/csv_table.h"
#include "sim/replay/report_kit.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

namespace tessera::sim::replay {
namespace {

constexpr std::array<std::string_view, 3> kMetrics = {kMetricAllocation, kMetricFragAmount,
                                                      kMetricFragRatio};

const std::vector<double>& SeriesOf(const SeedResult& run, std::string_view metric) {
  if (metric == kMetricFragAmount) return run.series.frag_amount_pct;
  if (metric == kMetricFragRatio) return run.series.frag_ratio_pct;
  return run.series.gpu_alloc_pct;
}

MeanStd StatsAt(const std::vector<SeedResult>& runs, std::string_view metric, int pct) {
  std::vector<double> values;
  for (const SeedResult& run : runs) {
    const auto& series = SeriesOf(run, metric);
    values.push_back(pct >= 0 && static_cast<size_t>(pct) < series.size()
                         ? series[pct]
                         : std::numeric_limits<double>::quiet_NaN());
  }
  return SampleMeanStd(values);
}

std::string Fixed(double value, int decimals) { return FormatFixed(value, decimals); }

std::optional<double> ParseDouble(std::string_view text) {
  if (text.empty()) return std::numeric_limits<double>::quiet_NaN();  // an empty cell
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

// ---- SVG line charts.

struct Line {
  std::string label;
  const char* color;
  bool dashed;
  std::vector<std::pair<double, double>> points;  // (arrived %, value)
};

double NiceStep(double range) {
  const double raw = range / 6;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= factor * magnitude) return factor * magnitude;
  }
  return 10 * magnitude;
}

std::string SvgChart(const std::string& title, const std::vector<Line>& lines) {
  constexpr double kWidth = 760, kHeight = 380, kLeft = 60, kRight = 170, kTop = 30, kBottom = 45;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  double y_min = std::numeric_limits<double>::infinity(), y_max = -y_min, x_max = kMaxArrivedPct;
  for (const Line& line : lines) {
    for (auto [x, y] : line.points) {
      y_min = std::min(y_min, y);
      y_max = std::max(y_max, y);
      x_max = std::max(x_max, x);
    }
  }
  if (!std::isfinite(y_min)) y_min = 0, y_max = 1;
  y_min = std::min(0.0, y_min);
  if (y_max <= y_min) y_max = y_min + 1;
  const double y_step = NiceStep(y_max - y_min);
  y_max = std::ceil(y_max / y_step) * y_step;
  auto px = [&](double x) { return kLeft + x / x_max * plot_w; };
  auto py = [&](double y) { return kTop + (1 - (y - y_min) / (y_max - y_min)) * plot_h; };

  SvgCanvas svg(kWidth, kHeight, 12);
  svg.Title(kLeft, 18, title);
  for (double y = y_min; y <= y_max + 1e-9; y += y_step) {
    svg.Line(kLeft, py(y), kLeft + plot_w, py(y), "#ddd");
    svg.Text(kLeft - 6, py(y) + 4, Fixed(y, y_step < 1 ? 1 : 0), "end");
  }
  for (int x = 0; x <= x_max; x += 10) {
    svg.Line(px(x), kTop, px(x), kTop + plot_h, "#eee");
    svg.Text(px(x), kTop + plot_h + 16, std::to_string(x), "middle");
  }
  svg.Text(kLeft + plot_w / 2, kHeight - 8, "arrived GPU requests (% of capacity)", "middle");
  svg.Rect(kLeft, kTop, plot_w, plot_h, "none", "#888");
  int legend_row = 0;
  for (const Line& line : lines) {
    if (line.points.empty()) continue;
    std::vector<std::pair<double, double>> points;
    points.reserve(line.points.size());
    for (auto [x, y] : line.points) points.emplace_back(px(x), py(y));
    svg.Polyline(points, line.color, 1.6, line.dashed);
    const double ly = kTop + 10 + 16 * legend_row++;
    svg.Line(kLeft + plot_w + 10, ly, kLeft + plot_w + 34, ly, line.color,
             line.dashed ? std::string(" stroke-width=\"2\"") + std::string(kDashed)
                         : std::string(" stroke-width=\"2\""));
    svg.Text(kLeft + plot_w + 40, ly + 4, line.label);
  }
  return svg.Finish();
}

std::vector<Line> ChartLines(const HtmlReportInput& input, std::string_view metric) {
  std::vector<Line> lines;
  for (size_t i = 0; i < input.policies.size(); ++i) {
    const PolicyRuns& policy = input.policies[i];
    const char* color = SeriesColor(i);
    Line ours{policy.policy, color, false, {}};
    for (int pct = 0; pct <= kMaxArrivedPct; ++pct) {
      MeanStd s = StatsAt(policy.runs, metric, pct);
      if (s.n > 0) ours.points.emplace_back(pct, s.mean);
    }
    lines.push_back(std::move(ours));
    const std::string label = PublishedPolicyLabel(policy.policy);
    Line published{label + " (published)", color, true, {}};
    for (const SummaryRow& row : input.published) {
      if (row.workload == input.workload && row.policy == label && row.metric == metric &&
          !std::isnan(row.mean)) {
        published.points.emplace_back(row.arrived_pct, row.mean);
      }
    }
    std::sort(published.points.begin(), published.points.end());
    if (!published.points.empty()) lines.push_back(std::move(published));
  }
  return lines;
}

std::string MeanPlusMinus(const MeanStd& s) {
  if (s.n == 0) return "&ndash;";
  return Fixed(s.mean, 2) + " &plusmn; " + Fixed(s.std, 2);
}

}  // namespace

std::string PublishedPolicyLabel(std::string_view policy) {
  static const std::map<std::string_view, std::string_view> labels = {
      {"random", "01-Random"},
      {"dotprod", "02-DotProd"},
      {"gpuclustering", "03-GpuClustering"},
      {"gpupacking", "04-GpuPacking"},
      {"bestfit", "05-BestFit"},
      {"fgd", "06-FGD"}};
  auto it = labels.find(policy);
  return std::string(it == labels.end() ? policy : it->second);
}

std::string WorkloadName(std::string_view pod_csv_path) {
  size_t slash = pod_csv_path.find_last_of("/\\");
  std::string_view name =
      slash == std::string_view::npos ? pod_csv_path : pod_csv_path.substr(slash + 1);
  if (name.size() > 4 && name.substr(name.size() - 4) == ".csv") name.remove_suffix(4);
  return std::string(name);
}

std::vector<SummaryRow> Summarize(std::string_view workload, std::string_view policy_label,
                                  const std::vector<SeedResult>& runs, int step_pct) {
  std::vector<SummaryRow> rows;
  if (step_pct <= 0) step_pct = 5;
  for (std::string_view metric : kMetrics) {
    for (int pct = 0; pct <= kMaxArrivedPct; pct += step_pct) {
      MeanStd s = StatsAt(runs, metric, pct);
      if (s.n == 0) continue;
      rows.push_back({std::string(workload), std::string(policy_label), std::string(metric), pct,
                      s.mean, s.std, s.n});
    }
  }
  return rows;
}

std::string SummaryCsv(const std::vector<SummaryRow>& rows) {
  CsvWriter csv({"workload", "policy", "metric", "arrived_pct", "mean", "std", "n_seeds"});
  for (const SummaryRow& row : rows) {
    csv.Row({row.workload, row.policy, row.metric, std::to_string(row.arrived_pct),
             Fixed(row.mean, 3), Fixed(row.std, 3), std::to_string(row.n_seeds)});
  }
  return csv.text();
}

Result<std::vector<SummaryRow>> ParseSummaryCsv(std::string_view text, std::string_view source) {
  auto table = ParseCsv(text, source);
  if (!table.ok()) return table.error();
  std::array<size_t, 7> at{};
  const std::array<std::string_view, 7> required = {"workload", "policy", "metric", "arrived_pct",
                                                    "mean",     "std",    "n_seeds"};
  for (size_t i = 0; i < required.size(); ++i) {
    std::optional<size_t> column = table->Column({required[i]});
    if (!column) {
      return Error{std::string(source) + ": header has no column '" + std::string(required[i]) +
                   "'"};
    }
    at[i] = *column;
  }
  std::vector<SummaryRow> rows;
  for (const auto& [line_number, fields] : table->rows) {
    // Columns 3.. are numbers; an empty cell is NaN, except for the load it is a row of.
    std::array<double, 4> numbers{};
    for (size_t i = 3; i < required.size(); ++i) {
      std::optional<double> value = ParseDouble(fields[at[i]]);
      if (!value || (i == 3 && std::isnan(*value))) {
        return Error{std::string(source) + ":" + std::to_string(line_number) + ": column '" +
                     std::string(required[i]) + "': expected a number"};
      }
      numbers[i - 3] = *value;
    }
    SummaryRow row;
    row.workload = fields[at[0]];
    row.policy = fields[at[1]];
    row.metric = fields[at[2]];
    row.arrived_pct = static_cast<int>(std::lround(numbers[0]));
    row.mean = numbers[1];
    row.std = numbers[2];
    row.n_seeds = std::isnan(numbers[3]) ? 0 : static_cast<int>(std::lround(numbers[3]));
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<std::vector<SummaryRow>> LoadSummaryCsv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open file"};
  std::ostringstream text;
  text << in.rdbuf();
  return ParseSummaryCsv(text.str(), path);
}

const SummaryRow* FindSummaryRow(const std::vector<SummaryRow>& rows, std::string_view workload,
                                 std::string_view policy, std::string_view metric,
                                 int arrived_pct) {
  for (const SummaryRow& row : rows) {
    if (row.arrived_pct == arrived_pct && row.metric == metric && row.policy == policy &&
        row.workload == workload) {
      return &row;
    }
  }
  return nullptr;
}

std::string RenderHtmlReport(const HtmlReportInput& input) {
  HtmlPage page(input.title);
  std::ostringstream html;
  html << "<p>Workload <b>" << HtmlEscape(input.workload) << "</b>. Solid lines: this replay "
       << "(mean over seeds). Dashed lines: the FGD paper's published results "
       << "(USENIX ATC'23, authors' simulator, 10 seeds).</p>\n";
  page.Html(html.str());
  if (input.published.empty()) page.Note("No published reference given.");
  html.str("");

  html << SvgChart("GPU allocation ratio (%)", ChartLines(input, kMetricAllocation));
  html << SvgChart("Fragmentation amount (% of GPU capacity)",
                   ChartLines(input, kMetricFragAmount));
  html << SvgChart("Fragmentation ratio (% of idle GPU)", ChartLines(input, kMetricFragRatio));

  html << "<h2>GPU allocation ratio (%), mean &plusmn; sample std over seeds</h2>\n<table>\n"
       << "<tr><th class=\"label\">policy</th><th>seeds</th><th>ours @100%</th>"
       << "<th>published @100%</th><th>&Delta;</th><th>ours @130%</th><th>published @130%</th>"
       << "<th>&Delta;</th><th>unallocated @130%</th></tr>\n";
  for (const PolicyRuns& policy : input.policies) {
    const std::string label = PublishedPolicyLabel(policy.policy);
    html << "<tr><td class=\"label\">" << HtmlEscape(policy.policy) << "</td><td>"
         << policy.runs.size() << "</td>";
    for (int pct : {100, kMaxArrivedPct}) {
      MeanStd ours = StatsAt(policy.runs, kMetricAllocation, pct);
      const SummaryRow* published =
          FindSummaryRow(input.published, input.workload, label, kMetricAllocation, pct);
      html << "<td>" << MeanPlusMinus(ours) << "</td><td>";
      if (published) {
        html << Fixed(published->mean, 2) << " &plusmn; " << Fixed(published->std, 2);
      } else {
        html << "&ndash;";
      }
      html << "</td><td>";
      if (published && ours.n > 0) {
        const double delta = ours.mean - published->mean;
        html << (delta >= 0 ? "+" : "") << Fixed(delta, 2);
      } else {
        html << "&ndash;";
      }
      html << "</td>";
    }
    MeanStd end = StatsAt(policy.runs, kMetricAllocation, kMaxArrivedPct);
    html << "<td>" << (end.n > 0 ? Fixed(100 - end.mean, 2) : std::string("&ndash;"))
         << "</td></tr>\n";
  }
  html << "</table>\n";

  html << "<h2>Failed pods by type (mean per seed)</h2>\n<table>\n<tr><th class=\"label\">"
       << "policy</th>";
  for (int kind = 0; kind < kPodKindCount; ++kind) {
    html << "<th>" << PodKindName(static_cast<PodKind>(kind)) << "</th>";
  }
  html << "<th>all</th><th>pods replayed</th><th>run time (s)</th>"
       << "<th>p99 decision (&micro;s)</th></tr>\n";
  for (const PolicyRuns& policy : input.policies) {
    const double n = std::max<size_t>(policy.runs.size(), 1);
    std::array<double, kPodKindCount> failed{};
    double all = 0, pods = 0, wall = 0, p99 = 0;
    for (const SeedResult& run : policy.runs) {
      for (int kind = 0; kind < kPodKindCount; ++kind) failed[kind] += run.failed_by_kind[kind];
      all += static_cast<double>(run.failed());
      pods += static_cast<double>(run.pods);
      wall += run.wall_seconds;
      p99 += run.decision_p99_us;
    }
    html << "<tr><td class=\"label\">" << HtmlEscape(policy.policy) << "</td>";
    for (double f : failed) html << "<td>" << Fixed(f / n, 1) << "</td>";
    html << "<td>" << Fixed(all / n, 1) << "</td><td>" << Fixed(pods / n, 0) << "</td><td>"
         << Fixed(wall / n, 3) << "</td><td>" << Fixed(p99 / n, 1) << "</td></tr>\n";
  }
  html << "</table>\n<p class=\"note\">Protocol: pods shuffled and inflated to 1.3&times; the "
       << "GPU capacity, placed one at a time with no departures; every node scored; ties drawn "
       << "uniformly. Seeds use std::mt19937_64, not Go's math/rand: compare means, not single "
       << "seeds.</p>\n";
  return page.Html(html.str()).Finish();
}

}  // namespace tessera::sim::replay
