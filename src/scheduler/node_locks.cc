#include "scheduler/node_locks.h"

namespace tessera::scheduler {

void NodeLocks::Unindex(const std::string& node, const Holder& holder) {
  if (holder.confirmed) return;
  auto it = placed_node_of_.find(holder.pod);
  if (it != placed_node_of_.end() && it->second == node) placed_node_of_.erase(it);
}

void NodeLocks::Observe(const std::string& node, bool locked, const std::string& holder,
                        Clock::time_point now) {
  auto it = held_.find(node);
  if (!locked) {
    // A placement whose bind has not locked the node yet stays; a lock the feed showed is gone.
    if (it != held_.end() && it->second.confirmed) held_.erase(it);
    return;
  }
  if (it == held_.end()) {
    held_.emplace(node, Holder{holder, now, true});
  } else if (it->second.pod != holder) {
    Unindex(node, it->second);
    it->second = Holder{holder, now, true};
  } else {
    Unindex(node, it->second);
    it->second.confirmed = true;  // the same holder keeps its first sighting: never younger
  }
}

void NodeLocks::Placed(const std::string& node, const std::string& holder, Clock::time_point now) {
  auto it = held_.find(node);
  // A lock the feed shows for another pod stays what it is: this placement's bind will meet it.
  if (it != held_.end() && it->second.confirmed && it->second.pod != holder) return;
  if (it != held_.end()) Unindex(node, it->second);
  // A pod holds only the node of its latest filter.
  Released(holder);
  held_.insert_or_assign(node, Holder{holder, now, false});
  placed_node_of_[holder] = node;
}

void NodeLocks::Released(const std::string& holder) {
  auto index = placed_node_of_.find(holder);
  if (index == placed_node_of_.end()) return;
  auto it = held_.find(index->second);
  if (it != held_.end() && !it->second.confirmed && it->second.pod == holder) held_.erase(it);
  placed_node_of_.erase(index);
}

void NodeLocks::Forget(const std::string& node) {
  auto it = held_.find(node);
  if (it == held_.end()) return;
  Unindex(node, it->second);
  held_.erase(it);
}

bool NodeLocks::HeldForOther(const std::string& node, const std::string& pod,
                             Clock::time_point now) const {
  auto it = held_.find(node);
  if (it == held_.end() || it->second.pod == pod) return false;
  const auto limit = it->second.confirmed ? stale_after_ : unconfirmed_after_;
  return now - it->second.since <= limit;
}

}  // namespace tessera::scheduler
