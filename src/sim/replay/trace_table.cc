#include "sim/replay/trace_table.h"
#include "sim/replay/report_kit.h"

#include <cmath>
#include <cstdio>

namespace tessera::sim::replay {
namespace {

std::string Format(const char* format, double a, double b = 0) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, a, b);
  return buffer;
}

std::string MeanPlusMinus(const Figure& f) { return Format("%.2f ± %.2f", f.mean, f.std); }

// The figure the headroom is measured from: tessera's, or the best policy's without it.
const Figure* Reference(const TraceRow& row) {
  const Figure* best = nullptr;
  for (const Figure& f : row.policies) {
    if (f.name == "tessera") return &f;
    if (best == nullptr || f.mean > best->mean) best = &f;
  }
  return best;
}

bool HasTessera(const TraceRow& row) {
  for (const Figure& f : row.policies) {
    if (f.name == "tessera") return true;
  }
  return false;
}

}  // namespace

std::string TraceTableMarkdown(const std::vector<TraceRow>& rows) {
  if (rows.empty()) return "";
  const TraceRow& first = rows.front();
  const bool tessera = HasTessera(first);
  std::string out = "| trace |";
  std::string rule = "| --- |";
  for (const Figure& f : first.policies) {
    out += " " + f.name + " |";
    rule += " ---: |";
  }
  out += " FGD (published) | " + std::string(tessera ? "tessera − FGD" : "best − FGD") +
         " | offline packing | upper bound | headroom |\n";
  rule += " ---: | ---: | ---: | ---: | ---: |\n";
  out += rule;

  std::vector<std::vector<double>> columns(first.policies.size() + 5);
  auto cell = [&](size_t column, std::optional<double> value, const std::string& text) {
    if (value) columns[column].push_back(*value);
    return " " + text + " |";
  };
  const size_t n = first.policies.size();
  for (const TraceRow& row : rows) {
    out += "| " + row.workload + " |";
    for (size_t i = 0; i < n; ++i) {
      if (i < row.policies.size()) {
        out += cell(i, row.policies[i].mean, MeanPlusMinus(row.policies[i]));
      } else {
        out += " |";
      }
    }
    const Figure* reference = Reference(row);
    if (row.published_fgd) {
      out += cell(n, row.published_fgd->mean, MeanPlusMinus(*row.published_fgd));
      const double delta = reference->mean - row.published_fgd->mean;
      out += cell(n + 1, delta, Format("%+.2f", delta));
    } else {
      out += " | |";
    }
    if (row.offline_packing) {
      out += cell(n + 2, row.offline_packing->mean, MeanPlusMinus(*row.offline_packing));
    } else {
      out += " |";
    }
    if (row.bound) {
      out += cell(n + 3, row.bound->mean, MeanPlusMinus(*row.bound));
      const double headroom = row.bound->mean - reference->mean;
      out += cell(n + 4, headroom, Format("%.2f", headroom));
    } else {
      out += " | |";
    }
    out += "\n";
  }
  out += "| mean |";
  for (const auto& values : columns) {
    if (values.empty()) {
      out += " |";
      continue;
    }
    double sum = 0;
    for (double v : values) sum += v;
    out += Format(" %.2f |", sum / static_cast<double>(values.size()));
  }
  out += "\n";
  return out;
}

std::string TraceTableCsv(const std::vector<TraceRow>& rows) {
  CsvWriter csv({"workload", "column", "mean", "std"});
  auto line = [&](const std::string& workload, const Figure& f) {
    csv.Row({workload, f.name, FormatFixed(f.mean, 3), FormatFixed(f.std, 3)});
  };
  for (const TraceRow& row : rows) {
    for (const Figure& f : row.policies) line(row.workload, f);
    if (row.published_fgd)
      line(row.workload, {"published:06-FGD", row.published_fgd->mean, row.published_fgd->std});
    if (row.offline_packing) line(row.workload, *row.offline_packing);
    if (row.bound) line(row.workload, *row.bound);
  }
  return csv.text();
}

std::vector<SummaryRow> SummarizeBounds(const std::string& workload,
                                        const std::vector<AllocationBound>& bounds,
                                        int arrived_pct) {
  std::vector<double> bound;
  std::vector<double> packing;
  for (const AllocationBound& b : bounds) {
    bound.push_back(b.gpu_alloc_pct);
    packing.push_back(b.offline_packing_pct);
  }
  std::vector<SummaryRow> rows;
  for (const auto& [label, values] :
       {std::pair{kUpperBoundLabel, bound}, std::pair{kOfflinePackingLabel, packing}}) {
    const MeanStd s = SampleMeanStd(values);
    rows.push_back({workload, std::string(label), std::string(kMetricAllocation), arrived_pct,
                    s.mean, s.std, s.n});
  }
  return rows;
}

std::string BoundsCsv(const std::string& workload, const std::vector<uint64_t>& seeds,
                      const std::vector<AllocationBound>& bounds) {
  CsvWriter csv({"workload", "seed", "gpu_alloc_pct_bound", "offline_packing_pct", "node_classes",
                 "pod_types", "solve_seconds"});
  for (size_t i = 0; i < bounds.size() && i < seeds.size(); ++i) {
    csv.Row({workload, std::to_string(seeds[i]), FormatFixed(bounds[i].gpu_alloc_pct, 3),
             FormatFixed(bounds[i].offline_packing_pct, 3), std::to_string(bounds[i].node_classes),
             std::to_string(bounds[i].pod_types), FormatFixed(bounds[i].solve_seconds, 3)});
  }
  return csv.text();
}

}  // namespace tessera::sim::replay
