#include "core/common/duration.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

using std::chrono::milliseconds;

TEST(Duration, ParsesGoStyleDurations) {
  EXPECT_EQ(ParseDuration("60s").value(), milliseconds(60000));
  EXPECT_EQ(ParseDuration("2m").value(), milliseconds(120000));
  EXPECT_EQ(ParseDuration("1m30s").value(), milliseconds(90000));
  EXPECT_EQ(ParseDuration("1h").value(), milliseconds(3600000));
  EXPECT_EQ(ParseDuration("500ms").value(), milliseconds(500));
  EXPECT_EQ(ParseDuration("1.5s").value(), milliseconds(1500));
}

TEST(Duration, BareNumberIsSeconds) { EXPECT_EQ(ParseDuration("45").value(), milliseconds(45000)); }

TEST(Duration, RejectsMalformedTextWithItNamed) {
  EXPECT_EQ(ParseDuration("").error().message, "duration \"\": empty");
  EXPECT_EQ(ParseDuration("10x").error().message,
            "duration \"10x\": unknown unit \"x\" (use h, m, s or ms)");
  EXPECT_FALSE(ParseDuration("-5s").ok());
  EXPECT_FALSE(ParseDuration("s").ok());
  EXPECT_FALSE(ParseDuration("1m30").ok());
  EXPECT_FALSE(ParseDuration("1..2s").ok());
}

}  // namespace
}  // namespace tessera
