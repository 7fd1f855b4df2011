#include "adapters/kube/token_bucket.h"

#include <algorithm>

namespace tessera::kube {

TokenBucket::TokenBucket(double rate, double burst, Clock::time_point now)
    : rate_(std::max(rate, 1e-9)), burst_(std::max(burst, 1.0)), tokens_(burst_), last_(now) {}

void TokenBucket::Refill(Clock::time_point now) {
  if (now <= last_) return;
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(burst_, tokens_ + elapsed * rate_);
  last_ = now;
}

TokenBucket::Clock::duration TokenBucket::TryTake(Clock::time_point now) {
  Refill(now);
  if (tokens_ >= 1.0) {
    tokens_ -= 1.0;
    return Clock::duration::zero();
  }
  const std::chrono::duration<double> wait((1.0 - tokens_) / rate_);
  return std::max(std::chrono::duration_cast<Clock::duration>(wait) + Clock::duration(1),
                  Clock::duration(1));
}

}  // namespace tessera::kube
