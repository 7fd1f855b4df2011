#pragma once

#include <chrono>

namespace tessera::kube {

// Token-bucket rate limiter: `rate` tokens per second, at most `burst` saved up. Not
// thread-safe; the clock is passed in so that tests control it.
class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  TokenBucket(double rate, double burst, Clock::time_point now);

  // Takes a token when one is available (returns zero); otherwise takes nothing and returns how
  // long until one will be.
  Clock::duration TryTake(Clock::time_point now);

 private:
  void Refill(Clock::time_point now);

  double rate_;
  double burst_;
  double tokens_;
  Clock::time_point last_;
};

}  // namespace tessera::kube
