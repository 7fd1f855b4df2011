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

// The mean of b - a over the seeds where both have a value (a and b are per seed, in the same
// seed order: two policies replaying the same pods), with the half-width of its 95% confidence
// interval (Student's t with n - 1 degrees of freedom). Pairing removes what the seeds share
// (the pods drawn), which dominates the spread of either policy alone.
struct PairedDifference {
  double mean = std::numeric_limits<double>::quiet_NaN();           // NaN when no seed has both
  double half_width_95 = std::numeric_limits<double>::quiet_NaN();  // NaN for fewer than 2 seeds
  int n = 0;
};
PairedDifference PairedMeanDifference(std::span<const double> a, std::span<const double> b);

// "+m.mm ± h.hh", or "+m.mm" without an interval (one seed); "" when no seed has both.
std::string FormatPairedDifference(const PairedDifference& d);

// printf's "%.<decimals>f"; "" for NaN (a CSV cell no seed has).
std::string FormatFixed(double value, int decimals);

}  // namespace tessera::sim
