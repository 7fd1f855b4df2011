#include "sim/replay/placement_state.h"

#include "core/config/scheduler_config.h"

namespace tessera::sim::replay {

model::Pod ReplayPod(const std::string& key) {
  const size_t slash = key.find('/');
  model::Pod pod;
  pod.ns = key.substr(0, slash);
  pod.name = slash == std::string::npos ? key : key.substr(slash + 1);
  pod.uid = key;
  return pod;
}

PlacementState::PlacementState(const std::vector<model::Node>& nodes)
    : state_(config::SchedulerConfig{}) {
  for (const auto& node : nodes) state_.UpsertNode(node);
  // ClusterState keeps nodes in a std::map: these pointers stay valid while it lives.
  nodes_.reserve(nodes.size());
  for (const auto& node : nodes) {
    node_index_.emplace(node.name, static_cast<int>(nodes_.size()));
    nodes_.push_back(state_.node(node.name));
  }
}

int PlacementState::NodeIndex(std::string_view name) const {
  const auto it = node_index_.find(name);
  return it == node_index_.end() ? -1 : it->second;
}

}  // namespace tessera::sim::replay
