#pragma once

#include <memory>
#include <string>

#include "sim/replay/policy.h"

namespace tessera::sim::replay {

// "tessera+defrag-N" (docs/defrag.md, "On the Alibaba trace"): tessera, and when it refuses a GPU
// pod, the defragmentation planner (sched::PlanDefrag, as `tessera defrag` runs it) on the
// replay's state: at most N running pods evicted, each placed again by the production scheduler
// elsewhere, so that the pod fits. A plan that the replay's own filters refuse (host CPU or
// memory, which the planner's copy does not check) is undone and the pod stays refused. The FGD
// protocol has no departures and no pending queue, so a plan is tried only at the moment a pod
// arrives and fits nowhere.
// `inner` places the pods first (nullptr: tessera, the policy's name says so; another policy
// there is for tests, where a baseline that spreads makes room a move can mend).
std::unique_ptr<Policy> MakeTesseraDefragPolicy(int max_evictions,
                                                std::unique_ptr<Policy> inner = nullptr);

// The policy name of MakeTesseraDefragPolicy(n), and the n a name asks for (0: not such a name).
std::string TesseraDefragPolicyName(int max_evictions);
int TesseraDefragEvictionsOf(const std::string& name);

}  // namespace tessera::sim::replay
