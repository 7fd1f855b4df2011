#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/name_list_budget.h"

namespace tessera::scheduler {

// Pods the filter placed nowhere, and whether kube-scheduler can be trusted to ask about them
// again. It asks after any cluster event, but its informers and ours are separate: it may see a
// deletion first and ask while our view still holds the departed pod, and some changes reach
// only us (a quota raised, a reservation expired, a node live again after the grace period).
// Then the pod waits for an unrelated event or kube-scheduler's 5-minute flush. This book finds
// the pods refused before our view last changed that nobody has asked about since.
class RefusedPods {
 public:
  using Clock = std::chrono::steady_clock;
  using Names = std::vector<std::string>;
  // Candidate names kept over all pods, each distinct list once (kube-scheduler's lists repeat).
  static constexpr size_t kMaxHeldNames = size_t{1} << 18;

  explicit RefusedPods(size_t max_held_names = kMaxHeldNames) : candidate_lists_(max_held_names) {}

  // The view changed in a way that may admit a refused pod: capacity freed, a node added,
  // changed or usable again, a quota changed.
  void ViewChanged() { ++version_; }
  uint64_t version() const { return version_; }

  // The filter placed `key` nowhere among `candidates` (nullptr: every node). Equal consecutive
  // lists are kept once (kube-scheduler sends the same list filter after filter). A pod whose
  // list would take the names kept past the maximum is not followed (kube-scheduler's own
  // retries still come): lists that differ every time cannot grow this without bound.
  void Refused(const std::string& key, const Names* candidates);
  void Forget(const std::string& key);
  // Drops every pod `waiting` (a map by pod key) does not hold.
  template <class Map>
  void KeepOnly(const Map& waiting) {
    std::erase_if(entries_, [&](const auto& e) { return waiting.count(e.first) == 0; });
  }
  bool Contains(const std::string& key) const { return entries_.count(key) > 0; }
  size_t size() const { return entries_.size(); }
  // Candidate names held, each distinct list once.
  size_t held_names() const { return candidate_lists_.held(); }

  struct Due {
    std::string key;
    std::shared_ptr<const Names> candidates;  // nullptr: every node
  };
  // Pods refused before the view's latest change and not filtered since for at least `after`
  // (counted from the first call that saw them stale), at most `limit`, in key order. Each pod
  // is due once per view version: a pod still refused at this version waits for the next
  // change.
  std::vector<Due> TakeDue(Clock::time_point now, Clock::duration after, size_t limit);

 private:
  struct Entry {
    uint64_t refused_at = 0;  // view version of the refusal
    std::optional<Clock::time_point> stale_since;
    uint64_t judged_at = 0;  // view version TakeDue last returned it at (0: never)
    std::shared_ptr<const Names> candidates;
  };
  std::map<std::string, Entry> entries_;
  NameListBudget candidate_lists_;
  uint64_t version_ = 1;
};

}  // namespace tessera::scheduler
