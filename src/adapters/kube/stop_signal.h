#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace tessera::kube {

// A one-way "stop now" flag that sleeping threads wake up for. Thread-safe.
class StopSignal {
 public:
  void Request() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_.store(true);
    }
    cv_.notify_all();
  }

  bool requested() const { return stopped_.load(); }

  // Sleeps up to `duration`; false when stop was requested (before or while sleeping).
  template <class Rep, class Period>
  bool SleepFor(std::chrono::duration<Rep, Period> duration) {
    std::unique_lock<std::mutex> lock(mu_);
    return !cv_.wait_for(lock, duration, [this] { return stopped_.load(); });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> stopped_{false};
};

}  // namespace tessera::kube
