#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera::scheduler {

// Where defragmentation runs want evicted pods' replacements (docs/defrag.md): a run writes the
// planned node on a pod (annotation tessera.io/defrag-moving-to) before evicting it; once the
// feed shows that pod terminating or gone, the next pod of the same controller that fits there
// is placed there. Keyed by the evicted pod's uid, so a pod seen terminating and then deleted
// counts once and a move is used once. Moves expire after `ttl` and are capped in number (the
// oldest dropped): the annotation is a pod's own word, so nothing a client writes grows this
// without bound. Time is passed in. Not thread-safe: the caller's lock.
class DefragMoves {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxMoves = 1024;
  static constexpr Clock::duration kTtl = std::chrono::minutes(10);
  // A node name is a DNS subdomain: longer annotation values name no node and are ignored, so
  // that a move never holds more than this of what a pod wrote.
  static constexpr size_t kMaxNodeName = 253;

  explicit DefragMoves(size_t max_moves = kMaxMoves, Clock::duration ttl = kTtl)
      : max_moves_(max_moves), ttl_(ttl) {}

  // The pod `evicted_uid` of controller `controller_uid` is leaving; its replacement belongs on
  // `node`. A move already known (used or not) is left as it is.
  void Leaving(const std::string& evicted_uid, const std::string& controller_uid,
               const std::string& node, Clock::time_point now);
  // The nodes, oldest move first, where a new pod of `controller_uid` is wanted.
  std::vector<std::string> NodesFor(const std::string& controller_uid, Clock::time_point now);
  // A pod of `controller_uid` was placed on `node` for one of its moves: that move is used.
  void Used(const std::string& controller_uid, const std::string& node);

  size_t size() const { return moves_.size(); }

 private:
  struct Move {
    std::string controller_uid;
    std::string node;
    Clock::time_point at;
    bool used = false;
  };
  void Expire(Clock::time_point now);

  size_t max_moves_;
  Clock::duration ttl_;
  std::map<std::string, Move> moves_;  // by evicted pod uid
};

}  // namespace tessera::scheduler
