#pragma once

// Constructors of the baseline policies (MakeMigPolicy is the public entry point).

#include <functional>
#include <memory>
#include <string>

#include "sim/mig_replay/policy.h"
#include "sim/mig_replay/tessera_request.h"

namespace tessera::sim::mig_replay {

std::unique_ptr<MigPolicy> MakeHamiPolicy(bool largest_free_run);

// HAMi's node choice (2.10 and master; hami-protocol.md 7.1): among the nodes where `place_on`
// finds picks for the pod, the highest binpack node score before the pod, ties to the first
// node in fleet order; commits pod `key` there.
replay::PlaceOutcome PlaceOnBestHamiNode(MigCluster& cluster, const std::string& key,
                                         const std::function<NodePicks(int node)>& place_on);
std::unique_ptr<MigPolicy> MakeFirstFitPolicy();
std::unique_ptr<MigPolicy> MakeBestFitPolicy();
std::unique_ptr<MigPolicy> MakeStaticPolicy(const MigCluster& cluster, bool balanced);
// How the `tessera` policy asks for each request type of the cluster's workload (indexed by type).
Result<std::vector<TesseraMigRequest>> ResolveTesseraRequests(const MigCluster& cluster);
// tessera's production scheduler over the cluster's state (tessera_mig_policy.cc); with
// `gpu_binpack` the GPU policy is binpack instead of the default spread; `node_policy` ranks the
// nodes (an operator's policy, named replay::TesseraPolicyName, as in the trace replay).
Result<std::unique_ptr<MigPolicy>> MakeTesseraMigPolicy(
    MigCluster& cluster, bool gpu_binpack,
    const sched::NodePolicy& node_policy = sched::NodePolicy::Tessera());

}  // namespace tessera::sim::mig_replay
