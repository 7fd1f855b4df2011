#include "sim/replay/seed_stats.h"

#include <cmath>
#include <cstdio>

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

std::string FormatFixed(double value, int decimals) {
  if (std::isnan(value)) return "";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

}  // namespace tessera::sim
