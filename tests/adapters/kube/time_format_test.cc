#include "adapters/kube/time_format.h"

#include <gtest/gtest.h>

namespace tessera::kube {
namespace {

TEST(TimeFormatTest, MicroTimeHasSixFractionalDigits) {
  const std::chrono::system_clock::time_point t{std::chrono::microseconds(1796018462123456)};
  EXPECT_EQ(FormatMicroTime(t), "2026-11-30T06:01:02.123456Z");
  EXPECT_EQ(FormatTime(t), "2026-11-30T06:01:02Z");
  EXPECT_EQ(FormatMicroTime(std::chrono::system_clock::time_point{}),
            "1970-01-01T00:00:00.000000Z");
}

}  // namespace
}  // namespace tessera::kube
