#pragma once

// An offline steady-state schedule built GPU by GPU ("patterns", for offline-lp-guided,
// offline_guided.h): column generation over the schedules of one GPU over the whole stream. A
// pattern is a set of (request, memory-slice span) that never overlap on the GPU while resident
// together; the master LP picks patterns for the GPUs of each class so that no request is placed
// twice, the prices of its optimum price the next patterns (one GPU's best schedule at those
// prices, a small MIP), and after a fixed number of rounds the master is solved in whole
// patterns. Unlike the placement LP (placement_bound.h) a pattern keeps a request on one GPU
// for its whole life, so the plan is a schedule: on one node of 8 A100s the placers behind the
// LP's acceptances left up to 2 points of it (docs/mig-replay.md, "Which end is loose"). A pod of
// several instances is priced instance by instance, so a plan may hold only some of its
// instances (pricing pods whole left GLPK's branch and bound without a pattern in its nodes);
// the policy then places such a pod, like every pod the plan does not hold, where no planned pod
// needs the room while it is resident. Not a policy of the benchmark: it knows the future.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "sim/mig_replay/cluster.h"
#include "sim/mig_replay/demand.h"
#include "sim/mig_replay/policy.h"

namespace tessera::sim::mig_replay {

inline constexpr std::string_view kOfflinePatterns = "patterns";

struct PatternOptions {
  int rounds = 15;          // of pricing, each a pattern per GPU of each class
  int pricing_nodes = 50;   // branch-and-bound nodes of one pattern's MIP
  int master_nodes = 2000;  // branch-and-bound nodes of the master in whole patterns
};

// Where the plan puts one instance: a GPU and the memory-slice mask of its placement.
struct PlannedInstance {
  int node = -1;
  int device = -1;
  uint32_t span = 0;
};

// Per request of the stream, its instances' places; empty: turned away (so is every request
// that holds nothing at the instants measured after `warmup`).
using PatternPlan = std::vector<std::vector<PlannedInstance>>;

PatternPlan SteadyPatternPlan(const MigCluster& cluster, const std::vector<Arrival>& arrivals,
                              size_t warmup, const PatternOptions& options = {});

// Places the pods ArrivalKey(i) where `plan` says, when all of the pod's instances are planned
// on one node and are free there. With `fill_from` (the stream the plan is of), every other pod
// of the stream goes where it fits and no pod the plan holds whole needs the memory slices while
// it is resident; without it, every other pod is refused.
std::unique_ptr<MigPolicy> MakePatternPolicy(const PatternPlan& plan,
                                             const std::vector<Arrival>* fill_from = nullptr);

}  // namespace tessera::sim::mig_replay
