#include "adapters/kube/token_bucket.h"

#include <gtest/gtest.h>

namespace tessera::kube {
namespace {

using std::chrono::milliseconds;

TEST(TokenBucketTest, BurstThenRate) {
  const TokenBucket::Clock::time_point t0{};
  TokenBucket bucket(/*rate=*/10, /*burst=*/2, t0);
  EXPECT_EQ(bucket.TryTake(t0), TokenBucket::Clock::duration::zero());
  EXPECT_EQ(bucket.TryTake(t0), TokenBucket::Clock::duration::zero());
  const auto wait = bucket.TryTake(t0);
  EXPECT_GT(wait, milliseconds(99));
  EXPECT_LT(wait, milliseconds(101));
  EXPECT_EQ(bucket.TryTake(t0 + milliseconds(100)), TokenBucket::Clock::duration::zero());
  EXPECT_GT(bucket.TryTake(t0 + milliseconds(100)), TokenBucket::Clock::duration::zero());
  // Idle time refills up to the burst only.
  const auto later = t0 + std::chrono::seconds(10);
  EXPECT_EQ(bucket.TryTake(later), TokenBucket::Clock::duration::zero());
  EXPECT_EQ(bucket.TryTake(later), TokenBucket::Clock::duration::zero());
  EXPECT_GT(bucket.TryTake(later), TokenBucket::Clock::duration::zero());
}

}  // namespace
}  // namespace tessera::kube
