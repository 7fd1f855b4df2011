#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/sched/fit.h"
#include "core/sched/fragmentation.h"
#include "core/sched/request.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// Fragmentation-aware scoring of sharing GPUs: the glue between ClusterState and the
// fragmentation measure, shared by the extender, `simulate` and `replay`.

// What the fragmentation measure sees of a node (MIG GPUs are left out: they are not shared).
NodeCapacity CapacityOf(const state::NodeState& node);
// The same, written into `out` (reusing its buffers).
void CapacityOf(const state::NodeState& node, NodeCapacity* out);

// The pod's shape for the demand mix: the GPUs of its app containers and the largest per-GPU
// request among them; nullopt for a pod without GPUs.
std::optional<DemandShape> ShapeOf(const PodRequest& request, int64_t cpu_milli,
                                   const std::string& gpu_type);

// For a pod asking one shared GPU: the fragmentation after placing it on each GPU (infinity where
// it does not fit by memory or cores). Lower is better; FitPodOnNode tries the lowest first.
std::vector<double> SingleGpuRanks(const state::NodeState& node, const NodeCapacity& capacity,
                                   const ContainerRequest& request, int64_t cpu_milli,
                                   const PreparedTarget& target);
// The same, written into `ranks` (reusing its buffer). With `workspace` (Reset for this node's
// `capacity` and `target`), the fragmentation is worked out through it: the same values.
void SingleGpuRanks(const state::NodeState& node, const NodeCapacity& capacity,
                    const ContainerRequest& request, int64_t cpu_milli,
                    const PreparedTarget& target, std::vector<double>* ranks,
                    NodeFragmentationWorkspace* workspace = nullptr);

}  // namespace tessera::sched
