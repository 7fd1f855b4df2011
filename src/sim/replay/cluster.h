#pragma once

// The replayed cluster: a PlacementState (tessera's ClusterState, where every placement is a
// reservation, the one cluster model of both replays) and, derived from its placements, the free
// CPU, memory and per-GPU milli-GPU of every trace node that the FGD baselines score, with the
// filters of the authors' simulator (kube-scheduler's NodeResourcesFit for CPU and memory, the
// Open-Gpu-Share plugin for GPUs: pkg/simulator/plugin/open_gpu_share.go).

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/common/result.h"
#include "sim/replay/placement_state.h"
#include "sim/replay/trace.h"

namespace tessera::sim::replay {

// A pod's "GPU affinity" tag as GpuClustering sees it (GetGpuAffinityFromPodAnnotation):
// kShareAffinity for a GPU-sharing pod, k for a pod of k whole GPUs, none for CPU-only pods.
inline constexpr int kShareAffinity = 0;
inline constexpr int kNoAffinity = -1;
int GpuAffinityOf(const TracePod& pod);

// How the scheduler picks among the nodes that share the top score.
enum class TieBreak {
  // The authors' simulator (its kube-scheduler is the fork mental2008/kubernetes v1.20.5-minor):
  // the first top-scoring node in the scheduler's node list. The simulator makes that list a
  // random permutation per seed (syncClusterResourceList renames the nodes "<rand.Perm>-name"
  // and sorts them), so ties go to a node preference that is random per run but fixed within
  // it: the published results need this (with kUniform, FGD loses about 5 points).
  kFirstInNodeOrder,
  // Upstream kube-scheduler's selectHost: uniform among the top scores, drawn per pod.
  kUniform,
};

// Which node GPU models a pod accepts, indexed by ReplayCluster's model id.
using ModelMask = std::vector<char>;

// Where a pod went: a node and the device indices of its GPUs there, one per requested GPU.
struct Choice {
  int node = -1;
  std::vector<int> gpus;
};

// How a trace node is registered in the PlacementState: node i is "n<i>", its GPUs
// "GPU-<i>-<g>", each with 1000 MiB (one milli-GPU = one MiB), 100 cores and no task limit.
std::string StateNodeName(int node);
inline constexpr int32_t kMibPerGpu = kMilliPerGpu;

class ReplayCluster {
 public:
  // Node indices follow `nodes`: that is the scheduler's node list order (see TieBreak).
  explicit ReplayCluster(const std::vector<TraceNode>& nodes,
                         TieBreak tie_break = TieBreak::kFirstInNodeOrder);
  ReplayCluster(const ReplayCluster&) = delete;
  ReplayCluster& operator=(const ReplayCluster&) = delete;

  // The cluster model every policy places into; tessera's scheduler reserves there itself.
  PlacementState& placement_state() { return *placement_; }
  const PlacementState& placement_state() const { return *placement_; }

  TieBreak tie_break() const { return tie_break_; }

  int node_count() const { return static_cast<int>(nodes_.size()); }
  const std::string& NodeName(int node) const { return nodes_[node].name; }
  int64_t CpuCapacity(int node) const { return nodes_[node].cpu_capacity; }
  int64_t CpuFree(int node) const { return nodes_[node].cpu_free; }
  int64_t MemoryCapacity(int node) const { return nodes_[node].memory_capacity; }
  int64_t MemoryFree(int node) const { return nodes_[node].memory_free; }
  int GpuCount(int node) const { return nodes_[node].gpu_count; }
  // Free milli-GPU of each GPU of the node, by device index.
  std::span<const int32_t> GpuFree(int node) const {
    return {gpu_free_.data() + nodes_[node].gpu_offset,
            static_cast<size_t>(nodes_[node].gpu_count)};
  }
  int64_t GpuFreeTotal(int node) const { return nodes_[node].gpu_free_total; }
  int FullyFreeGpus(int node) const { return nodes_[node].fully_free_gpus; }
  // Index into model_names(), or -1 for a node without GPUs.
  int ModelId(int node) const { return nodes_[node].model_id; }
  const std::vector<std::string>& model_names() const { return model_names_; }
  // Changes whenever the node's free resources change: a cache key for per-node scores.
  uint64_t Version(int node) const { return nodes_[node].version; }
  // (affinity tag, number of pods) of the GPU pods placed on the node.
  const std::vector<std::pair<int, int>>& GpuAffinities(int node) const {
    return nodes_[node].affinities;
  }

  int total_gpus() const { return total_gpus_; }
  int64_t total_gpu_milli() const { return total_gpus_ * kMilliPerGpu; }
  int64_t allocated_gpu_milli() const { return allocated_gpu_milli_; }
  int64_t idle_gpu_milli() const { return total_gpu_milli() - allocated_gpu_milli_; }

  // The filters. AllowedModels is computed once per pod so that Fits stays cheap per node.
  ModelMask AllowedModels(const TracePod& pod) const;
  bool FitsCpuAndMemory(int node, const TracePod& pod) const {
    const NodeState& n = nodes_[node];
    return n.cpu_free >= pod.cpu_milli && n.memory_free >= pod.memory_mib;
  }
  // GPU part of Open-Gpu-Share's Filter: the node has GPUs of an accepted model and the pod's
  // GPUs fit (a sharing pod: one GPU with free >= gpu_milli; n GPUs: n fully free GPUs).
  bool FitsGpu(int node, const TracePod& pod, const ModelMask& allowed) const;
  bool Fits(int node, const TracePod& pod, const ModelMask& allowed) const {
    return FitsCpuAndMemory(node, pod) && FitsGpu(node, pod, allowed);
  }
  bool Fits(int node, const TracePod& pod) const { return Fits(node, pod, AllowedModels(pod)); }
  std::vector<int> FeasibleNodes(const TracePod& pod) const;

  // Places the pod as `key` on `gpus` of `node` (device indices, one per requested GPU): a
  // reservation in the PlacementState, then the free resources. Refuses, with an error and no
  // change, anything the filters would not allow. An empty key names the pod
  // "replay/pod-<number of pods allocated before>".
  Status Allocate(int node, const TracePod& pod, std::span<const int> gpus,
                  const std::string& key = {});
  // For a policy that reserved pod `key` in the PlacementState itself (tessera's scheduler):
  // takes its node and GPUs from there and updates the free resources; refuses, and releases
  // the reservation, anything the filters would not allow.
  Status Record(const std::string& key, const TracePod& pod);
  // The placed pod `key` leaves (an eviction): its reservation is released and what it took is
  // free again. Returns the reservation as it was.
  Result<state::PodReservation> Release(const std::string& key, const TracePod& pod);
  // Places pod `key` as `reservation` says (one the scheduler made on a copy of the state, as a
  // defragmentation plan carries it); refuses, changing nothing, what the filters would not
  // allow (host CPU and memory, which the plan's copy does not see whole).
  Status Adopt(const TracePod& pod, state::PodReservation reservation);
  // Where the placed pod `key` is, read from the PlacementState; nullopt when it is not there.
  std::optional<Choice> PlacementOf(const std::string& key) const;

 private:
  struct NodeState {
    std::string name;
    int64_t cpu_capacity = 0;
    int64_t cpu_free = 0;
    int64_t memory_capacity = 0;
    int64_t memory_free = 0;
    int model_id = -1;
    int gpu_offset = 0;
    int gpu_count = 0;
    int64_t gpu_free_total = 0;
    int fully_free_gpus = 0;
    uint64_t version = 0;
    std::vector<std::pair<int, int>> affinities;
  };

  // Whether the filters allow the pod on `gpus` of `node`; an error naming why not.
  Status CheckAllowed(int node, const TracePod& pod, std::span<const int> gpus) const;
  // The free resources after the pod took `gpus` of `node` (CheckAllowed passed).
  void Take(int node, const TracePod& pod, std::span<const int> gpus);
  // What Take took, given back.
  void Give(int node, const TracePod& pod, std::span<const int> gpus);
  std::vector<model::Node> StateNodes() const;

  TieBreak tie_break_;
  std::vector<NodeState> nodes_;
  std::vector<int32_t> gpu_free_;
  std::vector<std::string> model_names_;
  int total_gpus_ = 0;
  int64_t allocated_gpu_milli_ = 0;
  int64_t allocations_ = 0;
  std::unique_ptr<PlacementState> placement_;  // not movable: the reservation cache points in
};

}  // namespace tessera::sim::replay
