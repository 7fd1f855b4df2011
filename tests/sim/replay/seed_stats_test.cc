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

TEST(SeedStatsTest, FixedTextAndAnEmptyCellForNaN) {
  EXPECT_EQ(FormatFixed(2.5, 3), "2.500");
  EXPECT_EQ(FormatFixed(-0.12345, 4), "-0.1235");
  EXPECT_EQ(FormatFixed(std::numeric_limits<double>::quiet_NaN(), 3), "");
}

}  // namespace
}  // namespace tessera::sim
