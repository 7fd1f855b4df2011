#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/codec/json_util.h"
#include "core/model/pod.h"
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

// A profile that could take one of the pod's instances on a GPU now, and where.
struct ExplainedOption {
  std::string profile;
  std::vector<uint32_t> starts;
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
  uint32_t memory_slices = 0;     // MIG: the slice map's length; 0 otherwise
  std::vector<ExplainedInstance> instances;
  std::vector<ExplainedOption> options;  // MIG: where one requested instance could go now
};

struct NodeExplanation {
  std::string name;
  bool fits = false;
  std::string reason;  // HAMi's node reason when it does not fit
  bool fits_when_empty = false;
  bool detailed = false;  // gpus carry use, holders and MIG maps (else only each GPU's reason)
  std::vector<GpuExplanation> gpus;
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
  std::vector<NodeExplanation> nodes;
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

std::string FormatExplanation(const Explanation& e);
codec::Json ExplanationToJson(const Explanation& e);

}  // namespace tessera::sched
