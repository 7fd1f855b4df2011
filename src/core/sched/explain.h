#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/codec/json_util.h"
#include "core/model/pod.h"
#include "core/sched/near_miss.h"
#include "core/sched/node_status.h"
#include "core/sched/preferences.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// Why a pod is (or is not) placeable, node by node and GPU by GPU, and what would make it fit:
// what `tessera explain` and `GET /explain` show (docs/explain.md).

// A MIG instance held on a GPU.
struct ExplainedInstance {
  std::string pod;  // empty for a foreign instance
  std::string profile;
  uint32_t start = 0;
  uint32_t size = 0;
  bool foreign = false;  // not tessera's (the node's tessera.io/foreign-mig-instances)
};

// A profile that could take one of the pod's devices on a GPU now, and where.
struct ExplainedOption {
  std::string profile;
  std::vector<uint32_t> starts;
};

// One check a GPU fails, in HAMi's word, with the figures behind it in the user's words
// ("needs 10000 MiB, 8000 free").
struct FailedCheck {
  std::string reason;
  std::string detail;
};

// A pod holding part of a GPU and how much of it.
struct GpuHolder {
  std::string pod;
  int64_t mem = 0;     // MiB
  int32_t cores = 0;   // percent of the GPU
  bool whole = false;  // its allocation annotation does not decode: it holds the GPU whole
};

struct GpuExplanation {
  int index = 0;
  std::string uuid;
  std::string type;
  std::string mode;
  // HAMi's check this GPU fails for one device of the pod's first GPU container; empty when it
  // passes them all on its own (the node may still fail: too few such GPUs, NUMA, topology).
  std::string reason;
  int32_t used = 0, count = 0;
  int64_t used_mem = 0, total_mem = 0;
  int32_t used_cores = 0, total_cores = 0;
  std::vector<std::string> pods;  // holding a share of this GPU (or an instance on it)
  // Detailed GPUs: every check the GPU fails, `reason` first (HAMi stops at the first; a GPU
  // short on memory and cores says both), and how much each of `pods` holds.
  std::vector<FailedCheck> checks;
  std::vector<GpuHolder> holders;
  uint32_t memory_slices = 0;  // MIG: the slice map's length; 0 otherwise
  std::vector<ExplainedInstance> instances;
  std::vector<ExplainedOption> options;  // MIG: where one requested device could go now
};

// What one device of the shown container takes on one GPU model of the cluster that the pod
// may use: a MIG instance of a profile, or a share of a GPU.
struct ModelMapping {
  std::string gpu_type;  // as its nodes register it
  bool mig = false;
  std::string profile;  // MIG: the profile one device takes; empty when none holds it
  int32_t mem = 0;      // MiB one device takes (the profile's memory on MIG)
  int32_t cores = 0;    // shared GPUs: percent of the GPU's cores
  int64_t gpu_mem = 0;  // shared GPUs: the GPU's memory (a device asking more fits no GPU)
  // One device fits an empty GPU of this model (a profile holds it, or the GPU has the memory).
  bool possible = false;
};

struct NodeExplanation {
  std::string name;
  bool fits = false;
  // Devices of the shown container its GPUs could still take now, each GPU on its own (a shared
  // GPU one, a MIG GPU as many instances as fit its free slices), the quota aside.
  int room = 0;
  NodeStatus status;  // why it does not fit (HAMi's node reason, FormatNodeStatus)
  bool fits_when_empty = false;
  bool detailed = false;  // gpus carry use, holders and MIG maps (else only each GPU's reason)
  std::vector<GpuExplanation> gpus;
};

// One limit of one ResourceQuota of the pod's namespace, against what the namespace uses and
// what the pod would add.
struct QuotaLimitExplanation {
  std::string quota;    // the ResourceQuota's name
  std::string key;      // "limits.nvidia.com/gpumem" or "limits.nvidia.com/gpucores"
  bool memory = false;  // the memory key: MiB (memoryFactor applied); else percent of a GPU
  int64_t limit = 0;
  int64_t used = 0;       // the namespace's use now
  int64_t request = 0;    // what the pod would be charged
  bool exceeded = false;  // used + request > limit
};

// The namespace's GPU quotas, when it has any and the pod fits nowhere.
struct QuotaExplanation {
  std::string ns;
  std::vector<QuotaLimitExplanation> limits;
  // The quota alone keeps the pod out: some node would take it but for the quota. The remedy is
  // then freeing quota (or raising it), not a node.
  bool blocks = false;
  int64_t free_mem = 0;    // MiB of quota to free for the pod (0: memory is not short)
  int64_t free_cores = 0;  // cores of quota to free (0: cores are not short)
};

// The fewest running pods on one node whose departure lets the pod fit there.
struct Remedy {
  std::string node;
  std::vector<std::string> pods;
  int64_t freed_mem = 0;  // MiB the pods hold on that node (ties: the least)
};

struct Explanation {
  std::string pod;
  std::string error;         // the pod's request or annotations are invalid
  bool passthrough = false;  // asks for no GPU: not this scheduler's to place
  bool fits = false;
  std::string message;  // kube-scheduler style summary when it fits nowhere
  std::vector<std::string> fitting_nodes;
  // Containers asking a little more than a MIG profile of the cluster's GPUs (FindNearMisses,
  // the webhook's admission warnings too), whether or not the pod fits.
  std::vector<NearMiss> near_misses;
  std::vector<NodeExplanation> nodes;
  int devices_asked = 0;  // by the container whose GPU lines are shown
  // The shown container's name, when the pod has more than one container asking for GPUs.
  std::string shown_container;
  // What one device of the shown container takes on each GPU model the pod may use, in the
  // order the models first appear among the nodes (the summary that leads the explanation).
  std::vector<ModelMapping> mappings;
  std::optional<QuotaExplanation> quota;
  bool never_fits = false;  // no node could hold it even with every pod gone
  std::optional<Remedy> remedy;
  bool search_complete = true;  // false: the remedy search hit its budget
  int evaluations = 0;          // single-node fits tried by the remedy search
};

struct ExplainLimits {
  int max_pods_removed = 3;     // the largest set tried per node
  int max_nodes = 32;           // nodes searched for a remedy (the first that could take the pod)
  int max_evaluations = 1000;   // single-node fits, over every node together
  int max_detailed_nodes = 16;  // nodes whose GPUs are shown in full (besides detail_node)
  std::string detail_node{};    // always shown in full
};

// The first phase, reading `live` (callers hold their lock for it): every node's verdict, and
// copies of the few nodes the remedy search will try. The second phase needs nothing shared.
struct ExplainDraft {
  Explanation explanation;
  model::Pod pod;
  PolicyDefaults defaults;
  ExplainLimits limits;
  std::vector<state::ClusterState> candidates;  // one node each (ClusterState::Subset)
};
ExplainDraft PrepareExplanation(const state::ClusterState& live, const model::Pod& pod,
                                const PolicyDefaults& defaults, const ExplainLimits& limits = {});
// The second phase: the smallest set of pods on one candidate node whose departure admits it.
Explanation FinishExplanation(ExplainDraft draft);

// Both phases.
Explanation ExplainPod(const state::ClusterState& live, const model::Pod& pod,
                       const PolicyDefaults& defaults, const ExplainLimits& limits = {});

// A failing node in the words of its GPU lines: how many GPUs fail which check and how many
// could take one device (the counts add up to the node's GPUs), and, where some could, why the
// node still fails ("2 GPUs: 1 could take one device, 1 CardInsufficientMemory; too few for the 2
// devices asked"). HAMi's node reason counts GPU visits instead (docs/explain.md).
std::string NodeSummary(const NodeExplanation& n, int devices_asked);

// GPU models as the explanation names them: without the vendor's "NVIDIA " or "NVIDIA-"
// prefix, unless two of `types` would then read alike (each keeps its full name), in `types`'
// order.
std::vector<std::string> ShortModelNames(const std::vector<std::string>& types);

// "2 × 3g.20gb on A100-SXM4-40GB, or 2 × 8000 MiB + 20% cores on Tesla T4, on one node": what
// the shown container asks of each GPU model (the summary's first line, without its indent).
std::string FormatMappings(const Explanation& e);

std::string FormatExplanation(const Explanation& e);
codec::Json ExplanationToJson(const Explanation& e);

}  // namespace tessera::sched
