#include "sim/replay/seed_stats.h"

#include <cmath>
#include <cstdio>
#include <vector>

namespace tessera::sim {

MeanStd SampleMeanStd(std::span<const double> values) {
  MeanStd out;
  double sum = 0;
  for (double v : values) {
    if (std::isnan(v)) continue;
    sum += v;
    ++out.n;
  }
  if (out.n == 0) return out;
  out.mean = sum / out.n;
  if (out.n > 1) {
    double squares = 0;
    for (double v : values) {
      if (!std::isnan(v)) squares += (v - out.mean) * (v - out.mean);
    }
    out.std = std::sqrt(squares / (out.n - 1));
  }
  return out;
}

namespace {

// The 97.5% quantile of Student's t distribution with `df` degrees of freedom.
double StudentT975(int df) {
  static constexpr double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                      2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                      2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                      2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  constexpr int kRows = static_cast<int>(sizeof kTable / sizeof kTable[0]);
  if (df >= 1 && df <= kRows) return kTable[df - 1];
  // Beyond the table the quantile is 1.96 + 2.4 / df to within 0.002.
  return 1.96 + 2.4 / df;
}

}  // namespace

PairedDifference PairedMeanDifference(std::span<const double> a, std::span<const double> b) {
  std::vector<double> differences;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (!std::isnan(a[i]) && !std::isnan(b[i])) differences.push_back(b[i] - a[i]);
  }
  const MeanStd s = SampleMeanStd(differences);
  PairedDifference out;
  out.n = s.n;
  out.mean = s.mean;
  if (s.n > 1) out.half_width_95 = StudentT975(s.n - 1) * s.std / std::sqrt(s.n);
  return out;
}

std::string FormatPairedDifference(const PairedDifference& d) {
  if (std::isnan(d.mean)) return "";
  char buffer[64];
  if (std::isnan(d.half_width_95)) {
    std::snprintf(buffer, sizeof buffer, "%+.2f", d.mean);
  } else {
    std::snprintf(buffer, sizeof buffer, "%+.2f ± %.2f", d.mean, d.half_width_95);
  }
  return buffer;
}

std::string FormatFixed(double value, int decimals) {
  if (std::isnan(value)) return "";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

}  // namespace tessera::sim
