#include "sim/mig_replay/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/common/strings.h"
#include "sim/mig_replay/geometry_free.h"
#include "sim/mig_replay/offline_guided.h"
#include "sim/mig_replay/placement_bound.h"
#include "sim/mig_replay/policy.h"
#include "sim/mig_replay/upper_bound.h"
#include "sim/replay/report_kit.h"

namespace tessera::sim::mig_replay {
namespace {

std::string Num(double v, int decimals = 1) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

std::string Color(const std::string& policy) {
  if (policy == kPolicyTessera) return "#d62728";
  if (policy == kPolicyTesseraGpuBinpack) return "#ff9896";
  if (policy == kReferencePooledSlices) return "#bbbbbb";
  if (policy == kUpperBound) return "#555555";
  if (policy == kPlacementBound) return "#888888";
  if (policy == kOfflineLpGuided) return "#999999";
  const auto& names = AllPolicyNames();
  const auto it = std::find(names.begin(), names.end(), policy);
  return replay::SeriesColor(it == names.end() ? 0 : static_cast<size_t>(it - names.begin()));
}

// The bound has only acceptance and demand served; the other measures are placements'.
std::vector<std::string> WithoutBound(const std::vector<std::string>& policies) {
  std::vector<std::string> out;
  for (const auto& p : policies) {
    if (!IsBoundColumn(p)) out.push_back(p);
  }
  return out;
}

template <class T>
std::vector<T> Distinct(const std::vector<SummaryRow>& rows, T SummaryRow::*field) {
  std::vector<T> out;
  for (const auto& r : rows) {
    if (std::find(out.begin(), out.end(), r.*field) == out.end()) out.push_back(r.*field);
  }
  return out;
}

// Grouped bars: one group per fleet, one bar per policy (mean, with a +-std whisker).
std::string BarChart(const std::string& title, const std::vector<SummaryRow>& rows,
                     const std::string& workload, const std::string& protocol,
                     const std::vector<std::string>& fleets,
                     const std::vector<std::string>& policies, MeanStd SummaryRow::*metric) {
  constexpr int kLeft = 50, kTop = 30, kHeight = 220, kBottom = 60, kGroupWidth = 130;
  const int width = kLeft + kGroupWidth * static_cast<int>(fleets.size()) + 20;
  const int height = kTop + kHeight + kBottom;
  const double bar = kGroupWidth * 0.85 / static_cast<double>(policies.size());
  auto y = [&](double pct) { return kTop + kHeight * (1.0 - std::clamp(pct, 0.0, 100.0) / 100.0); };
  replay::SvgCanvas svg(width, height, 11);
  svg.Title(kLeft, 16, title);
  for (int pct = 0; pct <= 100; pct += 20) {
    svg.Line(kLeft, y(pct), width - 20, y(pct), "#eee");
    svg.Text(kLeft - 6, y(pct) + 4, std::to_string(pct) + "%", "end");
  }
  for (size_t f = 0; f < fleets.size(); ++f) {
    const double x0 = kLeft + kGroupWidth * static_cast<double>(f) + kGroupWidth * 0.075;
    for (size_t p = 0; p < policies.size(); ++p) {
      const SummaryRow* row = FindRow(rows, fleets[f], workload, protocol, policies[p]);
      if (row == nullptr) continue;
      const MeanStd& m = row->*metric;
      const double x = x0 + bar * static_cast<double>(p);
      svg.Rect(x, y(m.mean), bar * 0.9, y(0) - y(m.mean), Color(policies[p]), "none",
               policies[p] + " " + fleets[f] + ": " + Num(m.mean, 2) + " ± " + Num(m.std, 2) + "%");
      if (m.std > 0) {
        const double cx = x + bar * 0.45;
        svg.Line(cx, y(m.mean - m.std), cx, y(m.mean + m.std), "#000");
      }
    }
    svg.Text(x0 + kGroupWidth * 0.425, kTop + kHeight + 14, fleets[f], "middle");
  }
  // Legend.
  double lx = kLeft;
  for (const auto& p : policies) {
    svg.Rect(lx, height - 24, 10, 10, Color(p));
    svg.Text(lx + 13, height - 15, p);
    lx += 13 + 7.0 * static_cast<double>(p.size()) + 14;
  }
  return svg.Finish();
}

// tessera minus the best baseline on demand served, one bar per fleet, with the 95% interval
// of the seed-by-seed difference: the axis is centred on 0, so a small difference reads as
// what it is, not as two tall bars of nearly the same height.
std::string DifferenceChart(const std::string& title, const std::vector<HeadlineRow>& headline,
                            const std::string& workload, const std::string& protocol,
                            const std::vector<std::string>& fleets) {
  std::vector<const HeadlineRow*> cells;
  double extent = 1;  // points; at least +-1 so that noise does not fill the chart
  for (const auto& f : fleets) {
    const HeadlineRow* found = nullptr;
    for (const auto& r : headline) {
      if (r.fleet == f && r.workload == workload && r.protocol == protocol) found = &r;
    }
    cells.push_back(found);
    if (found == nullptr || std::isnan(found->versus_best.mean)) continue;
    const double hw =
        std::isnan(found->versus_best.half_width_95) ? 0 : found->versus_best.half_width_95;
    extent = std::max(extent, std::abs(found->versus_best.mean) + hw);
  }
  extent = std::ceil(extent);
  constexpr int kLeft = 50, kTop = 30, kHeight = 160, kBottom = 40, kGroupWidth = 110;
  const int width = kLeft + kGroupWidth * static_cast<int>(fleets.size()) + 20;
  replay::SvgCanvas svg(width, kTop + kHeight + kBottom, 11);
  svg.Title(kLeft, 16, title);
  auto y = [&](double points) {
    return kTop + kHeight * (0.5 - std::clamp(points, -extent, extent) / (2 * extent));
  };
  for (double v : {-extent, -extent / 2, 0.0, extent / 2, extent}) {
    svg.Line(kLeft, y(v), width - 20, y(v), v == 0 ? "#888" : "#eee");
    svg.Text(kLeft - 6, y(v) + 4, (v > 0 ? "+" : "") + Num(v, 1), "end");
  }
  for (size_t f = 0; f < fleets.size(); ++f) {
    const double x = kLeft + kGroupWidth * static_cast<double>(f) + kGroupWidth * 0.25;
    const HeadlineRow* r = cells[f];
    if (r != nullptr && !std::isnan(r->versus_best.mean)) {
      const double d = r->versus_best.mean;
      const bool behind = HeadlineVersus{r->best_baseline, 0, r->versus_best}.behind();
      svg.Rect(x, std::min(y(d), y(0)), kGroupWidth * 0.5, std::abs(y(d) - y(0)),
               behind ? "#1f77b4" : "#d62728", "none",
               fleets[f] + ": tessera - " + r->best_baseline + " = " + Num(d, 2) + " points");
      if (!std::isnan(r->versus_best.half_width_95)) {
        const double cx = x + kGroupWidth * 0.25;
        svg.Line(cx, y(d - r->versus_best.half_width_95), cx, y(d + r->versus_best.half_width_95),
                 "#000");
      }
      svg.Text(x + kGroupWidth * 0.25, kTop + kHeight + 26, "vs " + r->best_baseline, "middle");
    }
    svg.Text(x + kGroupWidth * 0.25, kTop + kHeight + 14, fleets[f], "middle");
  }
  return svg.Finish();
}

std::string Cell(const SummaryRow* row, MeanStd SummaryRow::*metric, bool best) {
  if (row == nullptr) return "<td>–</td>";
  const MeanStd& m = row->*metric;
  return std::string("<td") + (best ? " class=\"best\"" : "") + ">" + Num(m.mean, 2) +
         " <span class=\"sd\">± " + Num(m.std, 2) + "</span></td>";
}

std::string Table(const std::vector<SummaryRow>& rows, const std::vector<std::string>& fleets,
                  const std::vector<std::string>& workloads,
                  const std::vector<std::string>& protocols,
                  const std::vector<std::string>& policies, MeanStd SummaryRow::*metric,
                  bool higher_is_better) {
  std::ostringstream html;
  html << "<table><tr><th class=\"label\">fleet</th><th class=\"label\">workload</th>"
       << "<th class=\"label\">protocol</th>";
  for (const auto& p : policies) html << "<th>" << HtmlEscape(p) << "</th>";
  html << "</tr>\n";
  for (const auto& f : fleets) {
    for (const auto& w : workloads) {
      for (const auto& pr : protocols) {
        if (FindRow(rows, f, w, pr, policies.front()) == nullptr) continue;
        // The best policy (not the bound) is highlighted.
        double best = higher_is_better ? -1e300 : 1e300;
        for (const auto& p : policies) {
          const SummaryRow* r = FindRow(rows, f, w, pr, p);
          if (r == nullptr || IsReferenceColumn(p)) continue;
          const double v = (r->*metric).mean;
          best = higher_is_better ? std::max(best, v) : std::min(best, v);
        }
        html << "<tr><td class=\"label\">" << HtmlEscape(f) << "</td><td class=\"label\">"
             << HtmlEscape(w) << "</td><td class=\"label\">" << HtmlEscape(pr) << "</td>";
        for (const auto& p : policies) {
          const SummaryRow* r = FindRow(rows, f, w, pr, p);
          const bool is_best =
              r != nullptr && !IsReferenceColumn(p) && std::abs((r->*metric).mean - best) < 1e-9;
          html << Cell(r, metric, is_best);
        }
        html << "</tr>\n";
      }
    }
  }
  html << "</table>\n";
  return html.str();
}

std::string OptimumTable(const std::vector<OptimumCase>& cases,
                         const std::vector<std::string>& policies) {
  // Per (model, GPUs): mean and worst served/optimum over workloads and seeds.
  std::ostringstream html;
  html << "<table><tr><th class=\"label\">model</th><th>GPUs</th><th>instances</th>";
  for (const auto& p : policies) html << "<th>" << HtmlEscape(p) << "</th>";
  html << "</tr>\n";
  std::vector<std::pair<std::string, int>> groups;
  for (const auto& c : cases) {
    if (std::find(groups.begin(), groups.end(), std::pair(c.model, c.gpus)) == groups.end()) {
      groups.emplace_back(c.model, c.gpus);
    }
  }
  for (const auto& [model, gpus] : groups) {
    int n = 0;
    for (const auto& c : cases) n += c.model == model && c.gpus == gpus ? 1 : 0;
    html << "<tr><td class=\"label\">" << HtmlEscape(model) << "</td><td>" << gpus << "</td><td>"
         << n << "</td>";
    for (const auto& p : policies) {
      std::vector<double> ratios;
      for (const auto& c : cases) {
        if (c.model != model || c.gpus != gpus || c.optimum == 0) continue;
        auto it = c.served.find(p);
        if (it != c.served.end()) {
          ratios.push_back(100.0 * static_cast<double>(it->second) /
                           static_cast<double>(c.optimum));
        }
      }
      if (ratios.empty()) {
        html << "<td>–</td>";
        continue;
      }
      const MeanStd m = SampleMeanStd(ratios);
      html << "<td>" << Num(m.mean, 1) << "% <span class=\"sd\">(worst "
           << Num(*std::min_element(ratios.begin(), ratios.end()), 1) << "%)</span></td>";
    }
    html << "</tr>\n";
  }
  html << "</table>\n";
  return html.str();
}

}  // namespace

std::string RenderMigHtmlReport(const MigReportInput& input) {
  const auto fleets = Distinct(input.rows, &SummaryRow::fleet);
  const auto workloads = Distinct(input.rows, &SummaryRow::workload);
  const auto protocols = Distinct(input.rows, &SummaryRow::protocol);
  std::vector<std::string> pending;  // the pending-queue protocols
  for (const auto& pr : protocols) {
    if (pr.starts_with("pending-")) pending.push_back(pr);
  }
  replay::HtmlPage page(input.title);
  for (const auto& note : input.notes) page.Note(note);
  std::ostringstream html;
  html << "<p>Bars: mean over seeds, whiskers ± one sample standard deviation. "
       << "<b style=\"color:#d62728\">tessera</b> is the production scheduler; light grey is the "
       << "pooled-slices reference policy (slices as a pool, positions ignored; it can be "
       << "beaten), dark grey the upper bound no policy can exceed. "
       << "See docs/mig-replay.md for the protocols and the definitions.</p>\n";
  if (!input.headline.empty()) {
    html << "<h2>Results first: tessera minus the best baseline</h2>\n<p>Demand served (memory "
         << "slices of the intended profiles held), tessera minus the baseline that serves the "
         << "most in each cell, mean over seeds with the 95% interval of the seed-by-seed "
         << "difference. Red: at or above it, or within the noise; blue: behind beyond the "
         << "interval.</p>\n";
    for (const auto& w : workloads) {
      for (const auto& pr : protocols) {
        html << DifferenceChart(w + ", " + pr + ": tessera - best baseline, demand served (points)",
                                input.headline, w, pr, fleets);
      }
    }
  }
  for (const auto& w : workloads) {
    html << "<h2>Workload " << HtmlEscape(w) << "</h2>\n";
    for (const auto& pr : protocols) {
      const bool steady = pr != "saturation";
      html << BarChart(w + ", " + pr + ": acceptance rate", input.rows, w, pr, fleets,
                       input.policies, &SummaryRow::acceptance);
      html << BarChart(w + ", " + pr +
                           (steady ? ": demand served, % of memory slices (time average)"
                                   : ": demand served at saturation, % of memory slices"),
                       input.rows, w, pr, fleets, input.policies, &SummaryRow::served_slices);
      if (pr.starts_with("pending-")) {
        html << BarChart(w + ", " + pr + ": pods ever placed, % of arrivals", input.rows, w, pr,
                         fleets, input.policies, &SummaryRow::ever_placed);
      }
    }
  }
  if (!pending.empty()) {
    html << "<h2>Pods ever placed, pending queue (% of arrivals)</h2>\n"
         << Table(input.rows, fleets, workloads, pending, input.policies, &SummaryRow::ever_placed,
                  true);
    html << "<h2>Mean wait from arrival to placement, pending queue (mean lifetimes)</h2>\n"
         << Table(input.rows, fleets, workloads, pending, input.policies, &SummaryRow::wait, false);
  }
  html << "<h2>Acceptance rate (%)</h2>\n"
       << Table(input.rows, fleets, workloads, protocols, input.policies, &SummaryRow::acceptance,
                true);
  html << "<h2>Demand served: memory slices of the intended profiles held (%)</h2>\n"
       << Table(input.rows, fleets, workloads, protocols, input.policies,
                &SummaryRow::served_slices, true);
  html << "<h2>Memory slices allocated (%)</h2>\n"
       << Table(input.rows, fleets, workloads, protocols, WithoutBound(input.policies),
                &SummaryRow::memory_slices, true);
  html << "<h2>Compute slices allocated (%)</h2>\n"
       << Table(input.rows, fleets, workloads, protocols, WithoutBound(input.policies),
                &SummaryRow::compute_slices, true);
  html << "<h2>GPUs in use (%)</h2>\n"
       << Table(input.rows, fleets, workloads, protocols, WithoutBound(input.policies),
                &SummaryRow::gpus_in_use, false);
  html << "<h2>Stranded memory slices (% of all slices)</h2>\n"
       << Table(input.rows, fleets, workloads, protocols, WithoutBound(input.policies),
                &SummaryRow::stranded, false);
  html << "<h2>MIG fragmentation (expected unusable free slices, % of all slices)</h2>\n"
       << Table(input.rows, fleets, workloads, protocols, WithoutBound(input.policies),
                &SummaryRow::fragmentation, false);
  if (!input.optimum.empty()) {
    std::vector<std::string> policies;
    for (const auto& p : input.policies) {
      if (!IsReferenceColumn(p)) policies.push_back(p);
    }
    html << "<h2>Against the offline optimum (tiny instances)</h2>\n<p>Served memory slices "
         << "as a percentage of the offline optimum, mean over workloads and seeds (worst case "
         << "in brackets).</p>\n"
         << OptimumTable(input.optimum, policies);
  }
  return page.Html(html.str()).Finish();
}

}  // namespace tessera::sim::mig_replay
