#include "sim/replay/tessera_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>

#include "core/model/annotations.h"
#include "core/sched/node_scoring.h"
#include "core/sched/scheduler.h"
#include "core/state/cluster_state.h"

namespace tessera::sim::replay {
namespace {

class TesseraPolicy : public Policy {
 public:
  TesseraPolicy(const TargetWorkload* prior, const sched::NodePolicy& node_policy)
      : name_(node_policy == sched::NodePolicy::Tessera() ? "tessera"
                                                          : TesseraPolicyName(node_policy)),
        node_policy_(node_policy),
        prior_(prior) {}

  std::string_view Name() const override { return name_; }

  Result<PlaceOutcome> Place(ReplayCluster& cluster, const TracePod& pod, const std::string& key,
                             std::mt19937_64& /*rng: tessera is deterministic*/) override {
    if (bound_ != &cluster) Bind(cluster);
    // kube-scheduler's own filters (resources, and GPU model for CPU-only pods is moot).
    candidates_.clear();
    candidate_index_.clear();
    for (int n = 0; n < cluster.node_count(); ++n) {
      if (!cluster.FitsCpuAndMemory(n, pod)) continue;
      if (pod.num_gpu > 0 && cluster.GpuCount(n) == 0) continue;
      candidates_.push_back(nodes_[n]);
      candidate_index_.push_back(n);
    }
    if (pod.num_gpu == 0) {
      const std::optional<int> node = ChooseCpuOnly(pod, candidate_index_);
      if (!node) return PlaceOutcome::kRefused;
      if (Status placed = cluster.Allocate(*node, pod, {}, key); !placed.ok()) {
        return Error{placed.message()};
      }
      return PlaceOutcome::kPlaced;
    }
    // The node list the extender gets as names, already looked up (the same evaluation); the
    // scheduler reserves its decision in the cluster's PlacementState, as the extender does.
    const sched::Decision d = scheduler_->Schedule(ToPod(pod, key), candidates_, 0);
    if (!d.scheduled()) return PlaceOutcome::kRefused;
    if (Status recorded = cluster.Record(key, pod); !recorded.ok()) {
      return Error{recorded.message()};
    }
    return PlaceOutcome::kPlaced;
  }

 private:
  static sched::PolicyDefaults Defaults(const sched::NodePolicy& node_policy) {
    return TesseraReplayDefaults(node_policy);
  }
  // Schedules into the cluster's own state, with the prior observed before its first pod.
  void Bind(ReplayCluster& cluster) {
    bound_ = &cluster;
    scheduler_.emplace(cluster.placement_state().state(), Defaults(node_policy_));
    // A pod that fits nowhere stays unplaced; why each node refused it is not needed.
    scheduler_->set_explain_failures(false);
    nodes_ = cluster.placement_state().nodes();
    if (prior_ == nullptr) return;
    // The whole distribution: the mix makes its own cut (the same share of the mass as FGD's),
    // and given the shapes FGD kept it would cut again.
    for (const auto& t : prior_->distribution) {
      scheduler_->ObserveDemand(DemandShapeOf(t.shape), static_cast<double>(t.count));
    }
  }

  static model::Pod ToPod(const TracePod& tp, const std::string& key) {
    return TesseraReplayPod(tp, key);
  }

  // CPU-only pods: the node where the pod strands the least GPU capacity for the demand mix;
  // among equals, the node with the least free GPU capacity (host CPU next to used-up GPUs is
  // worth nothing to GPU pods), then the scheduler's fixed node order (NodeState::tie_order), so
  // that CPU-only and GPU pods fill the same nodes first. The tightest CPU fit instead puts them
  // on nodes whose GPUs are still free and strands those GPUs as the CPU runs out.
  std::optional<int> ChooseCpuOnly(const TracePod& pod, const std::vector<int>& nodes) {
    sched::DemandShape shape;
    shape.cpu_milli = pod.cpu_milli;
    scheduler_->ObserveDemand(shape);
    const auto& target = scheduler_->demand_mix().Target();
    const sched::PreparedTarget prepared(target);
    // The host CPU a GPU shape needs: the fragmentation only sees the node's free CPU through
    // these thresholds.
    cpu_thresholds_.clear();
    for (const auto& w : target) {
      if (w.shape.gpus > 0) cpu_thresholds_.push_back(w.shape.cpu_milli);
    }
    std::sort(cpu_thresholds_.begin(), cpu_thresholds_.end());
    delta_by_class_.assign(bound_->placement_state().state().state_class_bound(),
                           std::numeric_limits<double>::quiet_NaN());
    int best = -1;
    double best_delta = std::numeric_limits<double>::infinity();
    int64_t best_gpu_free = 0;
    const state::NodeState* best_node = nullptr;
    for (int n : nodes) {
      const state::NodeState* ns = nodes_[n];
      const int64_t cpu_free =
          ns->cpu_allocatable_milli ? *ns->cpu_allocatable_milli - ns->cpu_used_milli : 0;
      const int64_t cpu_left = cpu_free - pod.cpu_milli;
      int64_t gpu_free = 0;
      for (size_t g = 0; g < ns->devices.size(); ++g) {
        gpu_free += std::max<int64_t>(0, ns->devices[g].total_mem_mib - ns->usage[g].used_mem);
      }
      double delta = 0;
      // When no shape's threshold lies in (cpu_left, cpu_free], every shape fits (or not) before
      // and after alike: the two fragmentations are the same computation and the delta is
      // exactly 0, so it is not computed.
      const auto first_above_left =
          std::upper_bound(cpu_thresholds_.begin(), cpu_thresholds_.end(), cpu_left);
      const bool cpu_matters = ns->cpu_allocatable_milli &&
                               first_above_left != cpu_thresholds_.end() &&
                               *first_above_left <= cpu_free;
      if (!ns->devices.empty() && cpu_matters) {
        // Nodes in the same state (one state class) have the same delta: work it out once.
        double* known = ns->state_class >= 0 ? &delta_by_class_[ns->state_class] : nullptr;
        if (known != nullptr && !std::isnan(*known)) {
          delta = *known;
        } else {
          sched::CapacityOf(*ns, &before_);
          after_ = before_;
          if (after_.cpu_free_milli) *after_.cpu_free_milli -= pod.cpu_milli;
          delta = sched::NodeFragmentation(after_, prepared) -
                  sched::NodeFragmentation(before_, prepared);
          if (known != nullptr) *known = delta;
        }
      }
      // Least added fragmentation, then the least free GPU, then the fixed node order.
      const bool equal_delta = delta <= best_delta + 1e-9;
      if (best < 0 || delta < best_delta - 1e-9 ||
          (equal_delta && (gpu_free < best_gpu_free ||
                           (gpu_free == best_gpu_free && ns->tie_order < best_node->tie_order)))) {
        best = n;
        best_delta = delta;
        best_gpu_free = gpu_free;
        best_node = ns;
      }
    }
    if (best < 0) return std::nullopt;
    return best;
  }

  std::string name_;
  sched::NodePolicy node_policy_;
  const TargetWorkload* prior_;
  ReplayCluster* bound_ = nullptr;
  std::optional<sched::Scheduler> scheduler_;   // on bound_'s state
  std::vector<const state::NodeState*> nodes_;  // by replay node index
  // Reused from pod to pod.
  std::vector<const state::NodeState*> candidates_;
  std::vector<int> candidate_index_;
  std::vector<int64_t> cpu_thresholds_;
  std::vector<double> delta_by_class_;  // NaN: not worked out yet
  sched::NodeCapacity before_;
  sched::NodeCapacity after_;
};

}  // namespace

sched::PolicyDefaults TesseraReplayDefaults(const sched::NodePolicy& node_policy) {
  sched::PolicyDefaults d;
  d.node = node_policy;
  d.gpu = "tessera,binpack";  // among GPUs that fragment alike, the fullest
  return d;
}

model::Pod TesseraReplayPod(const TracePod& tp, const std::string& key) {
  model::Pod p = ReplayPod(key);
  // Every replayed pod stands for a Deployment's: defragmentation may move it (the
  // tessera+defrag policies); scheduling does not read the owner.
  p.controller_kind = "ReplicaSet";
  model::Container c;
  c.name = "main";
  c.requests["cpu"] = std::to_string(tp.cpu_milli) + "m";
  c.limits["nvidia.com/gpu"] = std::to_string(tp.num_gpu);
  c.limits["nvidia.com/gpumem"] = std::to_string(tp.gpu_milli);
  c.limits["nvidia.com/gpucores"] = "0";
  p.containers.push_back(std::move(c));
  if (!tp.gpu_spec.empty()) {
    std::string types;
    for (const auto& t : tp.gpu_spec) types += (types.empty() ? "" : ",") + t;
    p.annotations[std::string(model::annotations::kUseGpuType)] = types;
  }
  return p;
}

std::unique_ptr<Policy> MakeTesseraPolicy(const TargetWorkload* prior,
                                          const sched::NodePolicy& node_policy) {
  return std::make_unique<TesseraPolicy>(prior, node_policy);
}

sched::DemandShape DemandShapeOf(const PodShape& shape) {
  sched::DemandShape s;
  s.gpus = shape.num_gpu;
  s.gpu_mem_mib = static_cast<int32_t>(shape.gpu_milli);
  s.cpu_milli = shape.cpu_milli;
  for (const auto& m : shape.models) s.gpu_type += (s.gpu_type.empty() ? "" : ",") + m;
  return s;
}

std::string TesseraPolicyName(const sched::NodePolicy& node_policy) {
  return "tessera:" + node_policy.name();
}

}  // namespace tessera::sim::replay
