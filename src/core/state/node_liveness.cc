#include "core/state/node_liveness.h"

#include "core/model/quantity.h"

namespace tessera::state {

void NodeLiveness::Observe(const model::Node& node, Clock::time_point now) {
  int64_t count = 0;
  if (auto it = node.allocatable.find(count_resource_); it != node.allocatable.end()) {
    auto q = model::Quantity::Parse(it->second);
    if (q.ok()) count = q->ToInt64().value_or(0);
  }
  if (count > 0) {
    zero_since_.erase(node.name);
  } else {
    zero_since_.try_emplace(node.name, now);  // the first time it was seen at 0
  }
}

std::optional<NodeLiveness::Clock::time_point> NodeLiveness::ZeroSince(
    const std::string& node) const {
  auto it = zero_since_.find(node);
  if (it == zero_since_.end()) return std::nullopt;
  return it->second;
}

std::string NodeLiveness::Verdict(const std::string& node, Clock::time_point now) const {
  if (!enabled()) return "";
  auto it = zero_since_.find(node);
  if (it == zero_since_.end() || now - it->second < grace_) return "";
  // HAMi's reason first (it drops such a node from its cache), then why.
  return "node unregistered: no live device plugin (allocatable " + count_resource_ + " is 0)";
}

}  // namespace tessera::state
