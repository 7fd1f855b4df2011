#include "scheduler/node_locks.h"

namespace tessera::scheduler {

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
    it->second = Holder{holder, now, true};
  } else {
    it->second.confirmed = true;  // the same holder keeps its first sighting: never younger
  }
}

void NodeLocks::Placed(const std::string& node, const std::string& holder, Clock::time_point now) {
  auto it = held_.find(node);
  // A lock the feed shows for another pod stays what it is: this placement's bind will meet it.
  if (it != held_.end() && it->second.confirmed && it->second.pod != holder) return;
  held_.insert_or_assign(node, Holder{holder, now, false});
}

void NodeLocks::Released(const std::string& holder) {
  for (auto it = held_.begin(); it != held_.end();) {
    if (!it->second.confirmed && it->second.pod == holder) {
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
}

bool NodeLocks::HeldForOther(const std::string& node, const std::string& pod,
                             Clock::time_point now) const {
  auto it = held_.find(node);
  if (it == held_.end() || it->second.pod == pod) return false;
  const auto limit = it->second.confirmed ? stale_after_ : unconfirmed_after_;
  return now - it->second.since <= limit;
}

}  // namespace tessera::scheduler
