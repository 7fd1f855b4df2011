#pragma once

#include <memory>
#include <string>

#include "core/model/pod.h"
#include "core/sched/fragmentation.h"
#include "core/sched/node_policy.h"
#include "core/sched/preferences.h"

#include "sim/replay/policy.h"

namespace tessera::sim::replay {

// The "tessera" replay policy: the production scheduler, not a re-implementation. Each trace
// node becomes a Node whose register annotation lists its GPUs (1000 "MiB" each, so that a
// milli-GPU is a MiB of GPU memory) and whose allocatable CPU is the node's; each trace pod
// becomes a Pod asking `nvidia.com/gpu: num_gpu`, `nvidia.com/gpumem: gpu_milli` and
// `cpu: cpu_milli`, with `nvidia.com/use-gputype` from gpu_spec. As in a real cluster,
// kube-scheduler's own filter (CPU and memory fit) narrows the nodes, and tessera's
// Scheduler::Schedule — the code behind the extender's filter — picks the node and the GPUs.
// Pods without GPUs never reach the extender in a cluster; here the same fragmentation score
// places them (fewest stranded GPUs), and they join the demand mix as FGD's workload does.
// The scheduler's state is built from the cluster on the first pod, in its node order.
// `prior`, when given, seeds the demand mix with its `distribution` (as a configured
// prior would in a cluster; the mix cuts it as FGD cuts the trace);
// `node_policy` ranks the nodes (an operator's policy, replayed as "tessera:NAME").
std::unique_ptr<Policy> MakeTesseraPolicy(
    const TargetWorkload* prior = nullptr,
    const sched::NodePolicy& node_policy = sched::NodePolicy::Tessera());

// The scheduler's settings of the tessera replay policies under an operator's node policy.
sched::PolicyDefaults TesseraReplayDefaults(const sched::NodePolicy& node_policy);
// The Pod a trace pod becomes (see MakeTesseraPolicy), named `key`, owned by a ReplicaSet.
model::Pod TesseraReplayPod(const TracePod& pod, const std::string& key);

// A trace pod shape as the scheduler's demand mix records the pod it becomes: its GPUs, its
// milli-GPU per GPU as MiB of GPU memory, its host CPU and its models as a use-gputype list.
sched::DemandShape DemandShapeOf(const PodShape& shape);

// The replay policy name of tessera under an operator's node policy: "tessera:NAME".
std::string TesseraPolicyName(const sched::NodePolicy& node_policy);

}  // namespace tessera::sim::replay
