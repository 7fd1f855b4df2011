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
  bool paired = false;
  for (const TraceRow& row : rows) paired = paired || row.tessera_minus_fgd.has_value();
  std::string out = "| trace |";
  std::string rule = "| --- |";
  for (const Figure& f : first.policies) {
    out += " " + f.name + " |";
    rule += " ---: |";
  }
  out += " FGD (published) | " + std::string(tessera ? "tessera − FGD" : "best − FGD") + " |";
  rule += " ---: | ---: |";
  if (paired) {
    out += " tessera − fgd, seed by seed |";
    rule += " ---: |";
  }
  out += " offline packing | upper bound | headroom |\n";
  rule += " ---: | ---: | ---: |\n";
  out += rule;

  // Column indices after the policies'.
  const size_t n = first.policies.size();
  const size_t published_column = n;
  const size_t delta_column = n + 1;
  const size_t paired_column = n + 2;  // only when `paired`
  const size_t packing_column = paired ? n + 3 : n + 2;
  const size_t bound_column = packing_column + 1;
  const size_t headroom_column = packing_column + 2;
  std::vector<std::vector<double>> columns(headroom_column + 1);
  auto cell = [&](size_t column, std::optional<double> value, const std::string& text) {
    if (value) columns[column].push_back(*value);
    return " " + text + " |";
  };
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
      out += cell(published_column, row.published_fgd->mean, MeanPlusMinus(*row.published_fgd));
      const double delta = reference->mean - row.published_fgd->mean;
      out += cell(delta_column, delta, Format("%+.2f", delta));
    } else {
      out += " | |";
    }
    if (paired) {
      const std::optional<PairedDifference>& d = row.tessera_minus_fgd;
      if (d && !std::isnan(d->mean)) {
        out += cell(paired_column, d->mean, FormatPairedDifference(*d));
      } else {
        out += " |";
      }
    }
    if (row.offline_packing) {
      out += cell(packing_column, row.offline_packing->mean, MeanPlusMinus(*row.offline_packing));
    } else {
      out += " |";
    }
    if (row.bound) {
      out += cell(bound_column, row.bound->mean, MeanPlusMinus(*row.bound));
      const double headroom = row.bound->mean - reference->mean;
      out += cell(headroom_column, headroom, Format("%.2f", headroom));
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
    // The seed-by-seed difference: its mean, and the half-width of its 95% interval as "std".
    if (row.tessera_minus_fgd && !std::isnan(row.tessera_minus_fgd->mean)) {
      line(row.workload, {"paired:tessera-fgd", row.tessera_minus_fgd->mean,
                          row.tessera_minus_fgd->half_width_95});
    }
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
