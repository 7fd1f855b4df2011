#pragma once

#include <cstdint>

#include "core/model/pod.h"
#include "core/sched/decision.h"
#include "core/sched/fit.h"
#include "core/sched/request.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// The reserve phase's input: the pod placed on `node` as `fit` says. Fills the decision's
// granted devices, HAMi's annotations (hami-protocol.md 3) and the reservation the scheduler
// keeps until the pod is bound or forgotten; `now_unix` stamps hami.io/vgpu-time.
void RecordPlacement(const model::Pod& pod, const PodRequest& request, int64_t cpu_milli,
                     const state::NodeState& node, const NodeFit& fit, int64_t now_unix,
                     Decision* decision);

}  // namespace tessera::sched
