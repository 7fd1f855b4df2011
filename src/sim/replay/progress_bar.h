#pragma once

#include <cstdio>
#include <mutex>
#include <string>

namespace tessera::sim::replay {

// A one-line progress bar on stderr, drawn only when stderr is a terminal (logs and CI stay
// clean). Draw may be called from several worker threads.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled) {}

  void Draw(const std::string& label, int done, int total) {
    if (!enabled_) return;
    constexpr int kWidth = 30;
    const int filled = total > 0 ? done * kWidth / total : kWidth;
    std::lock_guard<std::mutex> lock(mutex_);
    std::fprintf(stderr, "\r%-18s [%s%s] %3d%%", label.c_str(), std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), total > 0 ? done * 100 / total : 100);
    std::fflush(stderr);
  }
  void Clear() {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    std::fprintf(stderr, "\r%70s\r", "");
  }

 private:
  bool enabled_;
  std::mutex mutex_;
};

}  // namespace tessera::sim::replay
