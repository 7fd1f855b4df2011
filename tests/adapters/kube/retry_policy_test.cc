#include "adapters/kube/retry_policy.h"

#include <gtest/gtest.h>

namespace tessera::kube {
namespace {

using std::chrono::milliseconds;

TransferOutcome Outcome(long status, bool sent = true, bool permanent = false) {
  TransferOutcome outcome;
  outcome.response.status = status;
  if (status == 0) outcome.response.transport_error = "boom";
  outcome.request_sent = sent;
  outcome.permanent_failure = permanent;
  return outcome;
}

TEST(RetryPolicyTest, WhichFailuresAreRetried) {
  EXPECT_TRUE(IsRetryable("GET", Outcome(503)));
  EXPECT_TRUE(IsRetryable("GET", Outcome(0)));
  EXPECT_TRUE(IsRetryable("POST", Outcome(429)));
  EXPECT_FALSE(IsRetryable("POST", Outcome(503)));
  EXPECT_FALSE(IsRetryable("PATCH", Outcome(0, /*sent=*/true)));
  EXPECT_TRUE(IsRetryable("PATCH", Outcome(0, /*sent=*/false)));
  EXPECT_FALSE(IsRetryable("GET", Outcome(0, true, /*permanent=*/true)));
  EXPECT_FALSE(IsRetryable("GET", Outcome(404)));
  EXPECT_FALSE(IsRetryable("GET", Outcome(409)));
}

TEST(RetryPolicyTest, DelayHonoursRetryAfterWithACap) {
  ClientOptions options;
  options.retry_backoff_initial = milliseconds(100);
  options.retry_backoff_max = milliseconds(1000);
  options.retry_after_max = milliseconds(3000);
  Response r;
  r.status = 429;
  r.headers["retry-after"] = "2";
  EXPECT_EQ(RetryDelay(r, 0, options), milliseconds(2000));
  r.headers["retry-after"] = "60";
  EXPECT_EQ(RetryDelay(r, 0, options), milliseconds(3000));
  r.headers.clear();
  EXPECT_EQ(RetryDelay(r, 0, options), milliseconds(100));
  EXPECT_EQ(RetryDelay(r, 2, options), milliseconds(400));
  EXPECT_EQ(RetryDelay(r, 10, options), milliseconds(1000));
}

}  // namespace
}  // namespace tessera::kube
