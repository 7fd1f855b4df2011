#pragma once

// The one policy interface of both replays: a policy places a request into its replay's cluster
// (ReplayCluster for the FGD trace, MigCluster for the MIG benchmark), both views of one
// PlacementState, and reserves it there itself — the production scheduler as `tessera serve`
// reserves, a baseline through its cluster — so every policy is measured on the same state.

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace tessera::sim::replay {

enum class PlaceOutcome {
  kPlaced,   // reserved in the cluster under the given key
  kRefused,  // fits nowhere; nothing changed
};

template <class Cluster, class Request>
class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string_view Name() const = 0;
  // Places `request` as pod `key`. `rng` is the run's stream, for the policies that draw. An
  // error is the policy's own mistake (a choice the cluster refuses): the run stops with it.
  virtual Result<PlaceOutcome> Place(Cluster& cluster, const Request& request,
                                     const std::string& key, std::mt19937_64& rng) = 0;
  // Nodes the last Place changed besides the placed pod's own (a policy that moves running
  // pods), each once; the replay refreshes their per-node metrics.
  virtual std::vector<int> TakeOtherChangedNodes() { return {}; }
  // Running pods the policy has evicted and placed again so far (defragmentation).
  virtual int64_t evictions() const { return 0; }
};

}  // namespace tessera::sim::replay
