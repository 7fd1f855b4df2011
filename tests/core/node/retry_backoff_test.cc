#include "core/node/retry_backoff.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace tessera::node {
namespace {

TEST(RetryBackoffTest, DoublesFromOneSecondToFiveMinutesAndStartsOverAfterASuccess) {
  RetryBackoff backoff;
  EXPECT_TRUE(backoff.Due(0));  // never failed: try at once
  int64_t now = 0;
  std::vector<int64_t> delays;
  for (int i = 0; i < 11; ++i) {
    delays.push_back(backoff.Failed(now));
    EXPECT_FALSE(backoff.Due(now + delays.back() - 1));
    EXPECT_TRUE(backoff.Due(now + delays.back()));
    now += delays.back();
  }
  EXPECT_EQ(delays, (std::vector<int64_t>{1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000,
                                          256000, 300000, 300000}));
  EXPECT_EQ(backoff.failures(), 11);
  backoff.Succeeded();
  EXPECT_TRUE(backoff.Due(now));
  EXPECT_EQ(backoff.Failed(now), 1000);
}

// A loop that tries whenever it may, every millisecond for 3 s, makes 3 tries (at 0, 1 and 3 s):
// the 2.7 million of issue 38 D become a handful, and so do their log lines.
TEST(RetryBackoffTest, AGatedLoopTriesAFewTimesNotMillions) {
  RetryBackoff backoff;
  int tries = 0;
  for (int64_t now = 0; now <= 3000; ++now) {
    if (!backoff.Due(now)) continue;
    ++tries;
    backoff.Failed(now);
  }
  EXPECT_EQ(tries, 3);
  // An hour of a persistent failure: about 20 tries.
  for (int64_t now = 3001; now <= 3600 * 1000; now += 10) {
    if (!backoff.Due(now)) continue;
    ++tries;
    backoff.Failed(now);
  }
  EXPECT_LE(tries, 22);
}

TEST(RetryBackoffTest, CustomBoundsAreKept) {
  RetryBackoff backoff(500, 1200);
  EXPECT_EQ(backoff.Failed(0), 500);
  EXPECT_EQ(backoff.Failed(0), 1000);
  EXPECT_EQ(backoff.Failed(0), 1200);
  RetryBackoff degenerate(0, 0);  // at least 1 ms: never a zero wait
  EXPECT_EQ(degenerate.Failed(0), 1);
}

TEST(RepeatedMessageLimiterTest, ARepeatedMessageIsLoggedOnItsBackOffWithItsRepeats) {
  RepeatedMessageLimiter limiter;
  using Lines = std::vector<RepeatedMessageLimiter::Line>;
  auto messages = [](const Lines& lines) {
    std::vector<std::pair<std::string, int64_t>> out;
    for (const auto& l : lines) out.emplace_back(l.message, l.repeats);
    return out;
  };
  using Out = std::vector<std::pair<std::string, int64_t>>;
  EXPECT_EQ(messages(limiter.Admit({"a", "a", "b"}, 0)), (Out{{"a", 0}, {"b", 0}}));
  EXPECT_EQ(messages(limiter.Admit({"a", "b"}, 200)), Out{});
  EXPECT_EQ(messages(limiter.Admit({"a"}, 400)), Out{});  // b stops: forgotten
  EXPECT_EQ(messages(limiter.Admit({"a", "b"}, 1000)), (Out{{"a", 2}, {"b", 0}}));
  EXPECT_EQ(messages(limiter.Admit({"a"}, 2000)), Out{});  // a: next at 3000
  EXPECT_EQ(messages(limiter.Admit({"a"}, 3000)), (Out{{"a", 1}}));
  // A pass every 5 s for an hour with one persistent error: a few dozen lines, not 720.
  int lines = 0;
  for (int64_t now = 5000; now <= 3600 * 1000; now += 5000) {
    lines += static_cast<int>(limiter.Admit({"a"}, now).size());
  }
  EXPECT_LE(lines, 20);
}

}  // namespace
}  // namespace tessera::node
