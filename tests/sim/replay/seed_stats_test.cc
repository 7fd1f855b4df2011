#include "sim/replay/seed_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace tessera::sim {
namespace {

TEST(SeedStatsTest, MeanAndSampleStandardDeviation) {
  const std::vector<double> values = {1, 2, 3, 4};
  const MeanStd m = SampleMeanStd(values);
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  EXPECT_NEAR(m.std, 1.2909944, 1e-6);
  EXPECT_EQ(m.n, 4);
  const std::vector<double> one = {5};
  EXPECT_EQ(SampleMeanStd(one).std, 0);
  EXPECT_EQ(SampleMeanStd(one).mean, 5);
}

// A seed that never reached a point of a series has no value there.
TEST(SeedStatsTest, NaNsAreLeftOutAndNoValueGivesANaNMean) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> values = {nan, 2, 4, nan};
  const MeanStd m = SampleMeanStd(values);
  EXPECT_EQ(m.n, 2);
  EXPECT_DOUBLE_EQ(m.mean, 3);
  EXPECT_NEAR(m.std, std::sqrt(2.0), 1e-12);
  const std::vector<double> none = {nan};
  EXPECT_TRUE(std::isnan(SampleMeanStd(none).mean));
  EXPECT_EQ(SampleMeanStd(none).n, 0);
  EXPECT_TRUE(std::isnan(SampleMeanStd({}).mean));
}

// Two policies on the same seeds: the difference seed by seed, its mean and the half-width of
// its 95% interval (t with n - 1 degrees of freedom), over the seeds where both have a value.
TEST(SeedStatsTest, PairedDifferenceOfTwoPoliciesOnTheSameSeeds) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // A seed-dependent level of about 10 shared by both, b above a by 1, 2, 3 and 2.
  const std::vector<double> a = {90, 95, 80, nan, 85};
  const std::vector<double> b = {91, 97, 83, 70, 87};
  const PairedDifference d = PairedMeanDifference(a, b);
  EXPECT_EQ(d.n, 4);
  EXPECT_DOUBLE_EQ(d.mean, 2.0);
  // Differences 1, 2, 3, 2: sample std sqrt(2/3); t(0.975, 3) = 3.182.
  EXPECT_NEAR(d.half_width_95, 3.182 * std::sqrt(2.0 / 3.0) / 2.0, 1e-3);
  // The unpaired spread of either policy is far wider than the paired interval.
  EXPECT_GT(SampleMeanStd(a).std, 4 * d.half_width_95);
  // Beyond the t table, close to the normal quantile.
  std::vector<double> many_a(200, 0.0);
  std::vector<double> many_b(200, 0.0);
  for (size_t i = 0; i < many_b.size(); ++i) many_b[i] = i % 2 == 0 ? 1.0 : -1.0;
  const PairedDifference wide = PairedMeanDifference(many_a, many_b);
  EXPECT_NEAR(wide.half_width_95, 1.972 * 1.0025 / std::sqrt(200.0), 2e-3);
  // One seed: a mean, no interval; none: neither.
  EXPECT_TRUE(std::isnan(
      PairedMeanDifference(std::vector<double>{1}, std::vector<double>{2}).half_width_95));
  EXPECT_TRUE(std::isnan(PairedMeanDifference({}, {}).mean));
}

TEST(SeedStatsTest, FormatsAPairedDifferenceWithItsIntervalWhenItHasOne) {
  PairedDifference d;
  EXPECT_EQ(FormatPairedDifference(d), "");
  d.mean = -0.1;
  EXPECT_EQ(FormatPairedDifference(d), "-0.10");
  d.half_width_95 = 0.054;
  EXPECT_EQ(FormatPairedDifference(d), "-0.10 ± 0.05");
}

TEST(SeedStatsTest, FixedTextAndAnEmptyCellForNaN) {
  EXPECT_EQ(FormatFixed(2.5, 3), "2.500");
  EXPECT_EQ(FormatFixed(-0.12345, 4), "-0.1235");
  EXPECT_EQ(FormatFixed(std::numeric_limits<double>::quiet_NaN(), 3), "");
}

}  // namespace
}  // namespace tessera::sim
