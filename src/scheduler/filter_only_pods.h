#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::scheduler {

// Pods that only a filter request told us about: the cluster feed (informers, the embedded
// cluster) has not shown them. A pod the feed shows is forgotten when the feed deletes it; one
// only a client named would be remembered for ever, so these expire when no filter has named
// them for a while and are capped in number, the least recently named dropped first. The caller
// drops what it keeps about the keys these calls return. Time is passed in. Not thread-safe: the
// caller's lock.
class FilterOnlyPods {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kDefaultMaxPods = 10000;

  explicit FilterOnlyPods(size_t max_pods = kDefaultMaxPods) : max_pods_(max_pods) {}

  // A filter named the pod, which the feed has not shown. Returns the pods dropped to stay within
  // the cap (never `key`).
  std::vector<std::string> Named(const std::string& key, Clock::time_point now) {
    Forget(key);
    by_age_.emplace_back(key, now);
    index_.emplace(key, std::prev(by_age_.end()));
    std::vector<std::string> dropped;
    while (by_age_.size() > max_pods_) {
      dropped.push_back(std::move(by_age_.front().first));
      index_.erase(dropped.back());
      by_age_.pop_front();
    }
    return dropped;
  }
  // The feed shows the pod, or it is gone: it is no longer only a filter's.
  void Forget(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    by_age_.erase(it->second);
    index_.erase(it);
  }
  // The pods no filter has named for `ttl`, now forgotten.
  std::vector<std::string> Expire(Clock::time_point now, Clock::duration ttl) {
    std::vector<std::string> expired;
    while (!by_age_.empty() && by_age_.front().second + ttl <= now) {
      expired.push_back(std::move(by_age_.front().first));
      index_.erase(expired.back());
      by_age_.pop_front();
    }
    return expired;
  }

  bool Contains(const std::string& key) const { return index_.count(key) > 0; }
  size_t size() const { return index_.size(); }
  size_t max_pods() const { return max_pods_; }

 private:
  using Order = std::list<std::pair<std::string, Clock::time_point>>;  // least recently named first
  size_t max_pods_;
  Order by_age_;
  std::unordered_map<std::string, Order::iterator> index_;
};

}  // namespace tessera::scheduler
