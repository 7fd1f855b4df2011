#pragma once

// The one cluster model of both replays (the FGD trace replay and the MIG benchmark): tessera's
// own state::ClusterState, with every placement a PodReservation in it, whoever made it. The
// production scheduler (the `tessera` policies) reserves into it as `tessera serve` does; the
// baselines reserve through Reserve. Each replay keeps its own index on top (ReplayCluster's
// free milli-GPU and host resources, MigCluster's intended profiles), derived from this state.

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/pod.h"
#include "core/state/cluster_state.h"
#include "core/state/reservation_cache.h"

namespace tessera::sim::replay {

// The pod object a policy that schedules through the core (tessera's) hands the scheduler for
// the replay's pod `key` ("namespace/name"); its uid is the key.
model::Pod ReplayPod(const std::string& key);

class PlacementState {
 public:
  // Registers `nodes`; their order here is the replay's node order (index i = nodes[i]).
  explicit PlacementState(const std::vector<model::Node>& nodes);
  PlacementState(const PlacementState&) = delete;
  PlacementState& operator=(const PlacementState&) = delete;

  state::ClusterState& state() { return state_; }
  const state::ClusterState& state() const { return state_; }
  // The registered nodes in the replay's order; the pointers live as long as this object.
  const std::vector<const state::NodeState*>& nodes() const { return nodes_; }
  int node_count() const { return static_cast<int>(nodes_.size()); }
  // The replay's index of a node name, or -1.
  int NodeIndex(std::string_view name) const;

  // A baseline's placement: accounted at once and bound (nothing in a replay expires).
  void Reserve(state::PodReservation reservation) { reservations_.Place(std::move(reservation)); }
  // The pod `key` left: what it held is free again, whichever policy placed it.
  void Release(const std::string& key) { reservations_.Forget(key); }

 private:
  state::ClusterState state_;
  // Every placement is bound at once; nothing expires (the timeout is never reached).
  state::ReservationCache reservations_{state_, std::chrono::hours(24)};
  std::vector<const state::NodeState*> nodes_;
  std::map<std::string, int, std::less<>> node_index_;
};

}  // namespace tessera::sim::replay
