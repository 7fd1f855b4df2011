#include "core/model/quantity.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace tessera::model {
namespace {

struct WholeCase {
  const char* text;
  long long want;
};

TEST(QuantityTest, WholeNumbersInEverySuffixConvertToInt64) {
  const std::vector<WholeCase> cases = {
      {"0", 0},
      {"2", 2},
      {"8000", 8000},
      {"+5", 5},
      {"-1", -1},
      {"1Ki", 1024},
      {"1Mi", 1048576},
      {"16Gi", 17179869184LL},
      {"1Ti", 1099511627776LL},
      {"1Pi", 1125899906842624LL},
      {"1Ei", 1152921504606846976LL},
      {"1k", 1000},
      {"1M", 1000000},
      {"1G", 1000000000},
      {"1T", 1000000000000LL},
      {"1P", 1000000000000000LL},
      {"1E", 1000000000000000000LL},
      {"1e3", 1000},
      {"1E3", 1000},
      {"1e+3", 1000},
      {"2000e-3", 2},
      {"1000m", 1},
      {"1000000u", 1},
      {"1000000000n", 1},
      {"1.5Ki", 1536},
      {"0.5Ki", 512},
      {"1.", 1},
      {"100.0", 100},
      {"0001", 1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto q = Quantity::Parse(c.text);
    ASSERT_TRUE(q.ok()) << q.error().message;
    EXPECT_TRUE(q->IsWholeNumber());
    EXPECT_EQ(q->ToInt64(), std::optional<long long>(c.want));
  }
}

TEST(QuantityTest, FractionsAreNotWholeNumbers) {
  for (const char* text : {"0.5", ".5", "1.5", "100m", "1e-3", "1.0001", "1n"}) {
    SCOPED_TRACE(text);
    auto q = Quantity::Parse(text);
    ASSERT_TRUE(q.ok()) << q.error().message;
    EXPECT_FALSE(q->IsWholeNumber());
    EXPECT_EQ(q->ToInt64(), std::nullopt);
  }
}

TEST(QuantityTest, WholeNumbersBeyondInt64HaveNoInt64Value) {
  for (const char* text : {"9223372036854775808", "8Ei", "1e30"}) {
    SCOPED_TRACE(text);
    auto q = Quantity::Parse(text);
    ASSERT_TRUE(q.ok()) << q.error().message;
    EXPECT_TRUE(q->IsWholeNumber());
    EXPECT_EQ(q->ToInt64(), std::nullopt);
  }
}

TEST(QuantityTest, Int64MaximumIsKept) {
  auto q = Quantity::Parse("9223372036854775807");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->ToInt64(), std::optional<long long>(9223372036854775807LL));
}

TEST(QuantityTest, ZeroWithATinyExponentIsTheWholeNumberZero) {
  auto q = Quantity::Parse("0e-60");
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_TRUE(q->IsWholeNumber());
  EXPECT_EQ(q->ToInt64(), std::optional<long long>(0));
}

TEST(QuantityTest, SignIsReported) {
  EXPECT_TRUE(Quantity::Parse("-1")->IsNegative());
  EXPECT_TRUE(Quantity::Parse("-0.5")->IsNegative());
  EXPECT_FALSE(Quantity::Parse("+1")->IsNegative());
  EXPECT_FALSE(Quantity::Parse("-0")->IsNegative());
}

TEST(QuantityTest, KeepsTheOriginalText) {
  auto q = Quantity::Parse("16Gi");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->text(), "16Gi");
}

TEST(QuantityTest, MalformedTextIsAnErrorQuotingTheTextAndTheCause) {
  struct Case {
    const char* text;
    const char* why;
  };
  const std::vector<Case> cases = {
      {"", "empty"},
      {"+", "no digits"},
      {".", "no digits"},
      {"Gi", "no digits"},
      {"abc", "no digits"},
      {"1.2.3", "more than one decimal point"},
      {"1gi", "unknown suffix \"gi\""},
      {"1 ", "unknown suffix \" \""},
      {"1Ki5", "unknown suffix \"Ki5\""},
      {"1e", "bad exponent"},
      {"1e+", "bad exponent"},
      {"1e1.5", "bad exponent"},
      {"1e1000", "bad exponent"},
      {"1e31", "exponent out of range"},
      {"1e-61", "exponent out of range"},
      {"1234567890123456789012345678901", "too many digits"},
      {"999999999999999999999999999999Ei", "too large"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto q = Quantity::Parse(c.text);
    ASSERT_FALSE(q.ok());
    EXPECT_EQ(q.error().message, "quantity \"" + std::string(c.text) + "\": " + c.why);
  }
}

TEST(QuantityTest, LeadingZerosDoNotCountTowardsTheDigitLimit) {
  auto q = Quantity::Parse("0000000000000000000000000000000000000001");
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->ToInt64(), std::optional<long long>(1));
}

}  // namespace
}  // namespace tessera::model
