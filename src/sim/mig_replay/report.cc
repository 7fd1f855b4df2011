#include "sim/mig_replay/report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/common/strings.h"
#include "sim/mig_replay/geometry_free.h"
#include "sim/mig_replay/policy.h"
#include "sim/mig_replay/upper_bound.h"

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
  static const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                   "#8c564b", "#17becf", "#e377c2", "#7f7f7f"};
  const auto& names = AllPolicyNames();
  const auto it = std::find(names.begin(), names.end(), policy);
  const size_t i = it == names.end() ? 0 : static_cast<size_t>(it - names.begin());
  return kPalette[i % 8];
}

// Columns that are not policies: never "best".
bool IsReference(const std::string& p) { return p == kReferencePooledSlices || p == kUpperBound; }

// The bound has only acceptance and demand served; the other measures are placements'.
std::vector<std::string> WithoutBound(const std::vector<std::string>& policies) {
  std::vector<std::string> out;
  for (const auto& p : policies) {
    if (p != kUpperBound) out.push_back(p);
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
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg << "<text x=\"" << kLeft << "\" y=\"16\" font-weight=\"bold\">" << HtmlEscape(title)
      << "</text>\n";
  for (int pct = 0; pct <= 100; pct += 20) {
    svg << "<line x1=\"" << kLeft << "\" x2=\"" << width - 20 << "\" y1=\"" << Num(y(pct))
        << "\" y2=\"" << Num(y(pct)) << "\" stroke=\"#eee\"/>"
        << "<text x=\"" << kLeft - 6 << "\" y=\"" << Num(y(pct) + 4) << "\" text-anchor=\"end\">"
        << pct << "%</text>\n";
  }
  for (size_t f = 0; f < fleets.size(); ++f) {
    const double x0 = kLeft + kGroupWidth * static_cast<double>(f) + kGroupWidth * 0.075;
    for (size_t p = 0; p < policies.size(); ++p) {
      const SummaryRow* row = FindRow(rows, fleets[f], workload, protocol, policies[p]);
      if (row == nullptr) continue;
      const MeanStd& m = row->*metric;
      const double x = x0 + bar * static_cast<double>(p);
      svg << "<rect x=\"" << Num(x) << "\" y=\"" << Num(y(m.mean)) << "\" width=\""
          << Num(bar * 0.9) << "\" height=\"" << Num(y(0) - y(m.mean)) << "\" fill=\""
          << Color(policies[p]) << "\"><title>" << HtmlEscape(policies[p]) << " "
          << HtmlEscape(fleets[f]) << ": " << Num(m.mean, 2) << " ± " << Num(m.std, 2)
          << "%</title></rect>\n";
      if (m.std > 0) {
        const double cx = x + bar * 0.45;
        svg << "<line x1=\"" << Num(cx) << "\" x2=\"" << Num(cx) << "\" y1=\""
            << Num(y(m.mean - m.std)) << "\" y2=\"" << Num(y(m.mean + m.std))
            << "\" stroke=\"#000\"/>\n";
      }
    }
    svg << "<text x=\"" << Num(x0 + kGroupWidth * 0.425) << "\" y=\"" << kTop + kHeight + 14
        << "\" text-anchor=\"middle\">" << HtmlEscape(fleets[f]) << "</text>\n";
  }
  // Legend.
  double lx = kLeft;
  for (const auto& p : policies) {
    svg << "<rect x=\"" << Num(lx) << "\" y=\"" << height - 24 << "\" width=\"10\" height=\"10\" "
        << "fill=\"" << Color(p) << "\"/><text x=\"" << Num(lx + 13) << "\" y=\"" << height - 15
        << "\">" << HtmlEscape(p) << "</text>\n";
    lx += 13 + 7.0 * static_cast<double>(p.size()) + 14;
  }
  svg << "</svg>\n";
  return svg.str();
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
  html << "<table><tr><th>fleet</th><th>workload</th><th>protocol</th>";
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
          if (r == nullptr || IsReference(p)) continue;
          const double v = (r->*metric).mean;
          best = higher_is_better ? std::max(best, v) : std::min(best, v);
        }
        html << "<tr><td>" << HtmlEscape(f) << "</td><td>" << HtmlEscape(w) << "</td><td>"
             << HtmlEscape(pr) << "</td>";
        for (const auto& p : policies) {
          const SummaryRow* r = FindRow(rows, f, w, pr, p);
          const bool is_best =
              r != nullptr && !IsReference(p) && std::abs((r->*metric).mean - best) < 1e-9;
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
  html << "<table><tr><th>model</th><th>GPUs</th><th>instances</th>";
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
    html << "<tr><td>" << HtmlEscape(model) << "</td><td>" << gpus << "</td><td>" << n << "</td>";
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
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << HtmlEscape(input.title)
       << "</title>\n<style>body{font-family:sans-serif;margin:24px;color:#222}"
       << "table{border-collapse:collapse;margin:8px 0 24px}td,th{border:1px solid #ccc;"
       << "padding:3px 7px;text-align:right}th{background:#f4f4f4}td:nth-child(-n+3){text-align:"
       << "left}.sd{color:#888;font-size:85%}.best{background:#e6f4e6;font-weight:bold}"
       << ".note{color:#666}</style></head><body>\n<h1>" << HtmlEscape(input.title) << "</h1>\n";
  for (const auto& note : input.notes) html << "<p class=\"note\">" << HtmlEscape(note) << "</p>\n";
  html << "<p>Bars: mean over seeds, whiskers ± one sample standard deviation. "
       << "<b style=\"color:#d62728\">tessera</b> is the production scheduler; light grey is the "
       << "pooled-slices reference policy (slices as a pool, positions ignored; it can be "
       << "beaten), dark grey the upper bound no policy can exceed. "
       << "See docs/mig-replay.md for the protocols and the definitions.</p>\n";
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
      if (!IsReference(p)) policies.push_back(p);
    }
    html << "<h2>Against the offline optimum (tiny instances)</h2>\n<p>Served memory slices "
         << "as a percentage of the offline optimum, mean over workloads and seeds (worst case "
         << "in brackets).</p>\n"
         << OptimumTable(input.optimum, policies);
  }
  html << "</body></html>\n";
  return html.str();
}

}  // namespace tessera::sim::mig_replay
