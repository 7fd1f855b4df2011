#pragma once

#include <algorithm>
#include <chrono>

namespace tessera::kube {

// Exponential backoff: initial, 2x, 4x, ... up to max; Reset() after a success.
class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max)
      : initial_(std::max(initial, std::chrono::milliseconds(1))),
        max_(std::max(max, initial_)),
        next_(initial_) {}

  std::chrono::milliseconds Next() {
    const std::chrono::milliseconds delay = next_;
    next_ = std::min(next_ * 2, max_);
    return delay;
  }
  void Reset() { next_ = initial_; }

 private:
  std::chrono::milliseconds initial_;
  std::chrono::milliseconds max_;
  std::chrono::milliseconds next_;
};

}  // namespace tessera::kube
