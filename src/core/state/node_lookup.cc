#include "core/state/node_lookup.h"

#include <algorithm>

namespace tessera::state {

void NodeLookup::Resolve(const ClusterState& state, const std::vector<std::string>& names,
                         std::vector<const NodeState*>* nodes,
                         std::vector<const std::string*>* unregistered) {
  if (state_ != &state || node_set_version_ != state.node_set_version()) {
    state_ = &state;
    node_set_version_ = state.node_set_version();
    names_.clear();
    resolved_.clear();
  }
  const size_t known = std::min(names_.size(), names.size());
  names_.resize(names.size());
  resolved_.resize(names.size());
  nodes->reserve(nodes->size() + names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    if (i >= known || names_[i] != names[i]) {
      names_[i] = names[i];
      resolved_[i] = state.node(names[i]);
    }
    if (resolved_[i] != nullptr) {
      nodes->push_back(resolved_[i]);
    } else {
      unregistered->push_back(&names[i]);
    }
  }
}

void NodeLookup::ResolveOnce(const ClusterState& state, const std::vector<std::string>& names,
                             std::vector<const NodeState*>* nodes,
                             std::vector<const std::string*>* unregistered) {
  nodes->reserve(nodes->size() + names.size());
  for (const std::string& name : names) {
    if (const NodeState* node = state.node(name)) {
      nodes->push_back(node);
    } else {
      unregistered->push_back(&name);
    }
  }
}

}  // namespace tessera::state
