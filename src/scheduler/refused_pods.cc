#include "scheduler/refused_pods.h"

namespace tessera::scheduler {

void RefusedPods::Refused(const std::string& key, const Names* candidates) {
  Entry& e = entries_[key];
  e.refused_at = version_;
  e.stale_since.reset();
  e.candidates.reset();  // its earlier list no longer counts against the new one
  if (candidates == nullptr) return;
  e.candidates = candidate_lists_.Copy(*candidates);
  if (e.candidates == nullptr) entries_.erase(key);
}

void RefusedPods::Forget(const std::string& key) { entries_.erase(key); }

std::vector<RefusedPods::Due> RefusedPods::TakeDue(Clock::time_point now, Clock::duration after,
                                                   size_t limit) {
  std::vector<Due> due;
  for (auto& [key, e] : entries_) {
    if (e.refused_at == version_ || e.judged_at == version_) continue;
    if (!e.stale_since) e.stale_since = now;
    if (now - *e.stale_since < after) continue;
    if (due.size() == limit) break;
    e.judged_at = version_;
    e.stale_since.reset();  // a later change waits its own delay
    due.push_back({key, e.candidates});
  }
  return due;
}

}  // namespace tessera::scheduler
