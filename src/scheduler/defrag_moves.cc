#include "scheduler/defrag_moves.h"

#include <algorithm>

namespace tessera::scheduler {

void DefragMoves::Expire(Clock::time_point now) {
  std::erase_if(moves_, [&](const auto& entry) { return entry.second.at + ttl_ <= now; });
}

void DefragMoves::Leaving(const std::string& evicted_uid, const std::string& controller_uid,
                          const std::string& node, Clock::time_point now) {
  if (evicted_uid.empty() || controller_uid.empty() || node.empty()) return;
  if (node.size() > kMaxNodeName || evicted_uid.size() > kMaxNodeName ||
      controller_uid.size() > kMaxNodeName) {
    return;  // not a node name or a uid the API server makes
  }
  Expire(now);
  if (moves_.contains(evicted_uid)) return;
  while (moves_.size() >= max_moves_) {
    auto oldest = std::min_element(moves_.begin(), moves_.end(), [](const auto& a, const auto& b) {
      return a.second.at < b.second.at;
    });
    moves_.erase(oldest);
  }
  moves_.emplace(evicted_uid, Move{controller_uid, node, now});
}

std::vector<std::string> DefragMoves::NodesFor(const std::string& controller_uid,
                                               Clock::time_point now) {
  std::vector<std::string> nodes;
  if (moves_.empty() || controller_uid.empty()) return nodes;
  Expire(now);
  std::vector<const Move*> wanted;
  for (const auto& [uid, move] : moves_) {
    if (move.controller_uid == controller_uid && !move.used) wanted.push_back(&move);
  }
  std::stable_sort(wanted.begin(), wanted.end(),
                   [](const Move* a, const Move* b) { return a->at < b->at; });
  for (const Move* move : wanted) nodes.push_back(move->node);
  return nodes;
}

void DefragMoves::Used(const std::string& controller_uid, const std::string& node) {
  Move* first = nullptr;
  for (auto& [uid, move] : moves_) {
    if (move.controller_uid != controller_uid || move.node != node || move.used) continue;
    if (first == nullptr || move.at < first->at) first = &move;
  }
  if (first != nullptr) first->used = true;
}

}  // namespace tessera::scheduler
