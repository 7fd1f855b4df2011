#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tessera::codec {

// HAMi's node lock, the node annotation hami.io/mutex.lock (hami-protocol.md 6.2):
// "<RFC3339 time>,<namespace>,<name>" naming the pod being allocated, or "<RFC3339 time>" alone
// as older HAMi versions wrote it. One codec for the scheduler that takes it and the agent that
// reads and releases it, so both match the pod exactly (a substring ",ns,p" also matched pod
// "p1").
struct NodeLock {
  std::string time;  // as written; the caller parses it when it needs the age
  std::string ns;    // empty in a legacy lock
  std::string name;

  bool legacy() const { return ns.empty() && name.empty(); }
  bool HeldBy(std::string_view pod_ns, std::string_view pod_name) const {
    return !legacy() && ns == pod_ns && name == pod_name;
  }
};

// nullopt: not a lock this codec understands (empty, or neither 1 nor 3 comma-separated fields).
std::optional<NodeLock> ParseNodeLock(std::string_view value);
std::string FormatNodeLock(std::string_view time, std::string_view ns, std::string_view name);

}  // namespace tessera::codec
