#include "core/sched/node_status.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "core/common/strings.h"

namespace tessera::sched {

NodeStatus NodeStatus::OfNode(Reason r) {
  NodeStatus status;
  status.counts[r] = 1;
  return status;
}

NodeStatus NodeStatus::Unusable(std::string why) {
  NodeStatus status;
  status.code = Code::kUnusable;
  status.detail = std::move(why);
  return status;
}

bool ReasonOrder::operator()(const NodeStatus& a, const NodeStatus& b) const {
  return std::tie(a.devices, a.counts, a.detail) < std::tie(b.devices, b.counts, b.detail);
}

std::string FormatNodeStatus(const NodeStatus& status) {
  if (status.code == NodeStatus::Code::kUnusable) return status.detail;
  std::vector<std::string> pieces;
  status.counts.ForEach([&](Reason r, int32_t count) {
    std::string piece(ReasonName(r));
    if (status.devices > 0) {
      piece = std::to_string(count) + "/" + std::to_string(status.devices) + " " + piece;
    }
    pieces.push_back(std::move(piece));
  });
  std::sort(pieces.begin(), pieces.end());
  return Join(pieces, ", ");
}

namespace {

// Each distinct status once, with how many nodes have it.
std::map<NodeStatus, int, ReasonOrder> CountStatuses(
    const std::map<std::string, NodeStatus>& failed_nodes) {
  std::map<NodeStatus, int, ReasonOrder> distinct;
  for (const auto& [node, status] : failed_nodes) distinct[status]++;
  return distinct;
}

}  // namespace

std::string FormatPodMessage(const std::map<std::string, NodeStatus>& failed_nodes,
                             int total_nodes) {
  // By text: two statuses may read the same.
  std::map<std::string, int> histogram;
  for (const auto& [status, count] : CountStatuses(failed_nodes)) {
    histogram[FormatNodeStatus(status)] += count;
  }
  std::vector<std::string> pieces;
  pieces.reserve(histogram.size());
  for (const auto& [why, count] : histogram) pieces.push_back(std::to_string(count) + " " + why);
  std::sort(pieces.begin(), pieces.end());
  return "0/" + std::to_string(total_nodes) + " nodes are available: " + Join(pieces, ", ") + ".";
}

std::map<std::string, std::string> FormatNodeStatuses(
    const std::map<std::string, NodeStatus>& failed_nodes) {
  std::map<NodeStatus, std::string, ReasonOrder> texts;
  std::map<std::string, std::string> out;
  for (const auto& [node, status] : failed_nodes) {
    auto it = texts.find(status);
    if (it == texts.end()) it = texts.emplace(status, FormatNodeStatus(status)).first;
    out.emplace_hint(out.end(), node, it->second);
  }
  return out;
}

}  // namespace tessera::sched
