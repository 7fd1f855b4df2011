#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace tessera::scheduler {

// Shared copies of node-name lists that a request sent, counted against a maximum. kube-scheduler
// sends the same list filter after filter, so a copy equal to the previous one is shared and
// counted once; lists that differ every time (a client making them up) stop at the maximum
// instead of growing memory without bound. A list counts until its last holder drops it, however
// it is shared, so the total is exact. Not thread-safe (the caller's lock), except that a copy may
// be dropped anywhere.
class NameListBudget {
 public:
  using Names = std::vector<std::string>;

  explicit NameListBudget(size_t max_names)
      : max_names_(max_names), held_(std::make_shared<std::atomic<size_t>>(0)) {}

  // A shared copy of `names`, or nullptr when keeping it would pass the maximum.
  std::shared_ptr<const Names> Copy(const Names& names) {
    if (auto last = last_.lock(); last != nullptr && *last == names) return last;
    if (*held_ + names.size() > max_names_) return nullptr;
    *held_ += names.size();
    std::shared_ptr<std::atomic<size_t>> held = held_;
    std::shared_ptr<const Names> copy(new Names(names), [held](const Names* list) {
      *held -= list->size();
      delete list;
    });
    last_ = copy;
    return copy;
  }

  // Names held in all live copies (each list once).
  size_t held() const { return *held_; }
  size_t max_names() const { return max_names_; }

 private:
  size_t max_names_;
  std::shared_ptr<std::atomic<size_t>> held_;  // shared with the copies' deleters
  std::weak_ptr<const Names> last_;
};

}  // namespace tessera::scheduler
