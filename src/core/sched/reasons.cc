#include "core/sched/reasons.h"

#include <algorithm>
#include <vector>

#include "core/common/strings.h"

namespace tessera::sched {

std::string FormatNodeReason(const ReasonCounts& counts, int total_devices) {
  std::vector<std::string> pieces;
  for (const auto& [name, count] : counts) {
    if (count <= 0) continue;
    pieces.push_back(std::to_string(count) + "/" + std::to_string(total_devices) + " " + name);
  }
  std::sort(pieces.begin(), pieces.end());
  return Join(pieces, ", ");
}

std::string FormatPodMessage(const std::map<std::string, std::string>& failed_nodes,
                             int total_nodes) {
  std::map<std::string, int> histogram;
  for (const auto& [node, why] : failed_nodes) histogram[why]++;
  std::vector<std::string> pieces;
  pieces.reserve(histogram.size());
  for (const auto& [why, count] : histogram) pieces.push_back(std::to_string(count) + " " + why);
  std::sort(pieces.begin(), pieces.end());
  return "0/" + std::to_string(total_nodes) + " nodes are available: " + Join(pieces, ", ") + ".";
}

}  // namespace tessera::sched
