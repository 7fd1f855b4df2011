#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "core/model/pod.h"

namespace tessera::state {

// Whether a node's device plugin is alive, by the signal HAMi's scheduler uses
// (hami-protocol.md 9): the node's allocatable GPU count, which the kubelet drops to 0 when the
// plugin is gone. A count of 0 (or none at all) for `grace` makes the node not live; any positive
// count makes it live again at once. The clock is the caller's (monotonic); nothing here reads
// time or does I/O.
class NodeLiveness {
 public:
  using Clock = std::chrono::steady_clock;
  NodeLiveness(std::string count_resource, std::chrono::milliseconds grace)
      : count_resource_(std::move(count_resource)), grace_(grace) {}

  void Observe(const model::Node& node, Clock::time_point now);
  void Forget(const std::string& node) { zero_since_.erase(node); }

  // Empty when the node is live (or unknown, or the check is off); else why it is not.
  std::string Verdict(const std::string& node, Clock::time_point now) const;
  // Since when the node's count has been 0, if it is.
  std::optional<Clock::time_point> ZeroSince(const std::string& node) const;
  // The nodes whose count is 0, with since when (the only ones that can be not live).
  const std::map<std::string, Clock::time_point>& zero_since() const { return zero_since_; }
  const std::string& count_resource() const { return count_resource_; }
  bool enabled() const { return grace_.count() > 0; }

 private:
  std::string count_resource_;
  std::chrono::milliseconds grace_;
  std::map<std::string, Clock::time_point> zero_since_;  // nodes whose count is 0
};

}  // namespace tessera::state
