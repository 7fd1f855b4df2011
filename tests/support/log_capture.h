#pragma once

// Captures the process's log for one test: while it lives, the default spdlog logger writes to
// a sink that counts lines (by level) and keeps the first ones, so a test can assert that a
// failure is logged, and that it is not logged a million times.

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tessera::testing {

class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<Sink>()), previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>("", sink_);
    logger->set_level(spdlog::level::debug);
    spdlog::set_default_logger(std::move(logger));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Lines at warning level or above.
  size_t warnings() const {
    std::lock_guard lock(sink_->lines_mu);
    return sink_->warnings;
  }
  // The first lines (up to kKept), in order.
  std::vector<std::string> lines() const {
    std::lock_guard lock(sink_->lines_mu);
    return sink_->kept;
  }
  // Whether a kept line contains `text`.
  bool Contains(const std::string& text) const {
    for (const auto& line : lines()) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

 private:
  static constexpr size_t kKept = 1000;

  struct Sink final : spdlog::sinks::base_sink<std::mutex> {
    mutable std::mutex lines_mu;
    size_t warnings = 0;
    std::vector<std::string> kept;

   protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
      std::lock_guard lock(lines_mu);
      if (msg.level >= spdlog::level::warn) ++warnings;
      if (kept.size() < kKept) kept.emplace_back(msg.payload.data(), msg.payload.size());
    }
    void flush_() override {}
  };

  std::shared_ptr<Sink> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace tessera::testing
