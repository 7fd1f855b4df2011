#pragma once

// When the agent tries a failing operation again (XID event registration, the XID wait, the
// registration annotation, the kubelet registration): 1 s after the first failure, then twice
// as long after each further one, up to 5 minutes; a success starts over. A retry loop gated by
// it makes O(log t) attempts, and logging one line per attempt keeps the log that small too (a
// loop without it once wrote 2.7 million warnings in 3 s, issue 38 D). Pure: time is passed in.

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tessera::node {

class RetryBackoff {
 public:
  static constexpr int64_t kDefaultInitialMs = 1000;
  static constexpr int64_t kDefaultMaxMs = int64_t{5} * 60 * 1000;

  RetryBackoff() : RetryBackoff(kDefaultInitialMs, kDefaultMaxMs) {}
  RetryBackoff(int64_t initial_ms, int64_t max_ms)
      : initial_ms_(std::max<int64_t>(initial_ms, 1)), max_ms_(std::max(max_ms, initial_ms_)) {}

  // Whether the operation may be tried at `now_ms`: always before the first failure.
  bool Due(int64_t now_ms) const { return failures_ == 0 || now_ms >= next_try_ms_; }
  // A try failed at `now_ms`; returns the wait before the next one.
  int64_t Failed(int64_t now_ms) {
    const int64_t delay = failures_ == 0 ? initial_ms_ : std::min(last_delay_ms_ * 2, max_ms_);
    ++failures_;
    last_delay_ms_ = delay;
    next_try_ms_ = now_ms + delay;
    return delay;
  }
  // A try succeeded: the next failure waits the initial delay again.
  void Succeeded() {
    failures_ = 0;
    last_delay_ms_ = 0;
    next_try_ms_ = 0;
  }

  // Failures since the last success.
  int64_t failures() const { return failures_; }
  // When the next try is due (meaningful after a failure).
  int64_t next_try_ms() const { return next_try_ms_; }

 private:
  int64_t initial_ms_;
  int64_t max_ms_;
  int64_t failures_ = 0;
  int64_t last_delay_ms_ = 0;
  int64_t next_try_ms_ = 0;
};

// Which of a periodic pass's messages to log, for a loop that must keep its period (the MIG
// reconcile also destroys and confirms instances, so it does not slow down when one instance
// keeps failing): a new message at once; one that every pass repeats only on its own back-off
// (1 s, 2 s, ... 5 min), with the number of passes that repeated it meanwhile. A message a pass
// does not repeat is forgotten, so it is logged at once if it comes back.
class RepeatedMessageLimiter {
 public:
  struct Line {
    std::string message;
    int64_t repeats = 0;  // passes that repeated it since it was last logged
  };

  std::vector<Line> Admit(const std::vector<std::string>& messages, int64_t now_ms) {
    std::vector<Line> out;
    std::map<std::string, Seen> seen;
    for (const std::string& m : messages) {
      if (seen.count(m) > 0) continue;  // once per pass
      auto it = seen_.find(m);
      Seen s = it == seen_.end() ? Seen{} : it->second;
      if (s.backoff.Due(now_ms)) {
        out.push_back({m, s.unlogged});
        s.unlogged = 0;
        s.backoff.Failed(now_ms);
      } else {
        ++s.unlogged;
      }
      seen.emplace(m, s);
    }
    seen_ = std::move(seen);
    return out;
  }

 private:
  struct Seen {
    RetryBackoff backoff;
    int64_t unlogged = 0;
  };
  std::map<std::string, Seen> seen_;
};

}  // namespace tessera::node
