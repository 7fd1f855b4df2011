#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>

namespace tessera::scheduler {

// Which nodes HAMi's node lock (hami.io/mutex.lock, --node-lock=hami) holds, or is about to hold,
// and for which pod. A bind on a node locked for another pod fails with "node lock contention"
// and its pod waits for kube-scheduler's backoff, so the filter offers such a node only when no
// unlocked candidate fits (ClusterView::ScheduleLocked; docs/serve.md, "Node lock"). A node is
// held from the filter that places a pod there (its bind will take the lock: kube-scheduler
// filters the next pods while that bind runs) until the node feed shows the lock released after
// the device plugin's Allocate. One entry per node at most: bounded by the cluster's nodes, not
// by what clients write. A lock held longer than `stale_after` since this view first saw it (the
// holder died, HAMi's --node-lock-timeout), or a filter's placement no bind confirmed within
// `unconfirmed_after` (the reservation's timeout), no longer counts. Time is passed in. Not
// thread-safe: the caller's lock.
class NodeLocks {
 public:
  using Clock = std::chrono::steady_clock;

  explicit NodeLocks(Clock::duration stale_after = std::chrono::minutes(5),
                     Clock::duration unconfirmed_after = std::chrono::minutes(1))
      : stale_after_(stale_after), unconfirmed_after_(unconfirmed_after) {}

  // The node feed shows `node` locked for pod `holder` ("ns/name"; empty: a legacy lock without
  // a pod), or unlocked (`locked` false).
  void Observe(const std::string& node, bool locked, const std::string& holder,
               Clock::time_point now);
  // A filter placed pod `holder` on `node`: its bind will take the lock there.
  void Placed(const std::string& node, const std::string& holder, Clock::time_point now);
  // That placement was given up (its reservation released, its bind failed): the node is
  // `holder`'s no more, unless the feed shows the lock.
  void Released(const std::string& holder);
  void Forget(const std::string& node);

  // Whether a bind of pod `pod` ("ns/name") on `node` would meet another pod's lock now.
  bool HeldForOther(const std::string& node, const std::string& pod, Clock::time_point now) const;
  size_t size() const { return held_.size(); }

 private:
  struct Holder {
    std::string pod;
    Clock::time_point since;
    bool confirmed = false;  // seen on the node (else only a filter's placement)
  };
  // Drops `holder`'s index entry when it points at `node` (its entry there is going away).
  void Unindex(const std::string& node, const Holder& holder);

  Clock::duration stale_after_;
  Clock::duration unconfirmed_after_;
  std::map<std::string, Holder> held_;  // by node
  // The node of each pod's unconfirmed placement (its latest filter's), so that Released does
  // not walk every held node: no larger than held_.
  std::map<std::string, std::string> placed_node_of_;
};

}  // namespace tessera::scheduler
