#pragma once

#include <string>
#include <vector>

namespace tessera::sim {

struct DemoPart {
  std::string title;
  std::string source;    // name used in messages
  std::string scenario;  // YAML text (compiled in from examples/)
};

// `tessera demo`: the motivating MIG case and the sharing case, no files or cluster needed.
std::vector<DemoPart> DemoParts();

}  // namespace tessera::sim
