#pragma once

#include <set>
#include <string>

#include "core/sched/decision.h"
#include "core/sched/node_status.h"

namespace tessera::testing {

// The nodes of `d` where preemption cannot help: what the extender answers as
// FailedAndUnresolvableNodes.
inline std::set<std::string> UnresolvableNodes(const sched::Decision& d) {
  std::set<std::string> nodes;
  for (const auto& [node, status] : d.failed_nodes) {
    if (!status.resolvable()) nodes.insert(node);
  }
  return nodes;
}

}  // namespace tessera::testing
