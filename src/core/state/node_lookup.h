#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/state/cluster_state.h"

namespace tessera::state {

// Candidate node names resolved to nodes, remembering the previous list. kube-scheduler sends
// the same names in the same order request after request; comparing each with the one at its
// position last time reads two arrays in order, where a hash lookup per name (thousands per
// request) misses the cache two or three times in an index the decision's own work has pushed
// out of it. A name that differs is looked up and remembered. Everything is forgotten when the
// cluster's node set changes (ClusterState::node_set_version), so no pointer outlives its node.
class NodeLookup {
 public:
  // The registered names' nodes into `nodes`, in order; the others into `unregistered`
  // (pointers into `names`).
  void Resolve(const ClusterState& state, const std::vector<std::string>& names,
               std::vector<const NodeState*>* nodes, std::vector<const std::string*>* unregistered);
  // The same answer, remembering nothing (for callers that cannot keep a NodeLookup).
  static void ResolveOnce(const ClusterState& state, const std::vector<std::string>& names,
                          std::vector<const NodeState*>* nodes,
                          std::vector<const std::string*>* unregistered);

 private:
  const ClusterState* state_ = nullptr;
  uint64_t node_set_version_ = 0;
  std::vector<std::string> names_;          // the previous list
  std::vector<const NodeState*> resolved_;  // per name; nullptr: not registered then
};

}  // namespace tessera::state
