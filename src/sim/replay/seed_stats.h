#pragma once

// What both replays (the FGD trace replay and the MIG benchmark) report over seeds: the mean and
// sample standard deviation of a metric, and its fixed-point text in their CSV files.

#include <limits>
#include <span>
#include <string>

namespace tessera::sim {

struct MeanStd {
  double mean = std::numeric_limits<double>::quiet_NaN();  // NaN when no seed has a value
  double std = 0;  // sample standard deviation (0 for one seed)
  int n = 0;       // seeds with a value
};

// Over the values that are not NaN (a seed that never reached a point of a series has none).
MeanStd SampleMeanStd(std::span<const double> values);

// printf's "%.<decimals>f"; "" for NaN (a CSV cell no seed has).
std::string FormatFixed(double value, int decimals);

}  // namespace tessera::sim
