#include "sim/replay/tessera_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "core/codec/node_register.h"
#include "core/model/annotations.h"
#include "core/sched/node_scoring.h"
#include "core/sched/scheduler.h"
#include "core/state/cluster_state.h"
#include "core/state/reservation_cache.h"

namespace tessera::sim::replay {
namespace {

constexpr int32_t kMibPerGpu = 1000;  // one milli-GPU = one MiB of a 1000-MiB GPU

std::string GpuUuid(int node, int gpu) {
  return "GPU-" + std::to_string(node) + "-" + std::to_string(gpu);
}

class TesseraPolicy : public Policy {
 public:
  TesseraPolicy(const TargetWorkload* prior, const sched::NodePolicy& node_policy)
      : name_(node_policy == sched::NodePolicy::Tessera() ? "tessera"
                                                          : TesseraPolicyName(node_policy)),
        state_(config::SchedulerConfig{}),
        scheduler_(state_, Defaults(node_policy)),
        reservations_(state_, std::chrono::hours(24)) {
    // A pod that fits nowhere stays unplaced; why each node refused it is not needed.
    scheduler_.set_explain_failures(false);
    if (prior == nullptr) return;
    for (const auto& t : prior->shapes) {
      sched::DemandShape s;
      s.gpus = t.shape.num_gpu;
      s.gpu_mem_mib = static_cast<int32_t>(t.shape.gpu_milli);
      s.cpu_milli = t.shape.cpu_milli;
      for (const auto& m : t.shape.models) s.gpu_type += (s.gpu_type.empty() ? "" : ",") + m;
      scheduler_.ObserveDemand(s, static_cast<double>(t.count));
    }
  }

  std::string_view Name() const override { return name_; }

  std::optional<Choice> Choose(const ReplayCluster& cluster, const TracePod& pod,
                               std::mt19937_64& /*rng: tessera is deterministic*/) override {
    if (!bound_) Bind(cluster);
    ++pod_counter_;
    // kube-scheduler's own filters (resources, and GPU model for CPU-only pods is moot).
    candidates_.clear();
    candidate_index_.clear();
    for (int n = 0; n < cluster.node_count(); ++n) {
      if (!cluster.FitsCpuAndMemory(n, pod)) continue;
      if (pod.num_gpu > 0 && cluster.GpuCount(n) == 0) continue;
      candidates_.push_back(nodes_[n]);
      candidate_index_.push_back(n);
    }
    if (pod.num_gpu == 0) return ChooseCpuOnly(pod, candidate_index_);
    model::Pod kpod = ToPod(pod);
    // The node list the extender gets as names, already looked up (the same evaluation).
    sched::Decision d = scheduler_.Schedule(kpod, candidates_, 0);
    if (!d.scheduled()) return std::nullopt;
    Choice choice;
    choice.node = NodeIndex(d.node);
    for (const auto& slot : d.containers) {
      for (const auto& g : slot) {
        choice.gpus.push_back(std::stoi(g.uuid.substr(g.uuid.rfind('-') + 1)));
      }
    }
    return choice;
  }

 private:
  static sched::PolicyDefaults Defaults(const sched::NodePolicy& node_policy) {
    sched::PolicyDefaults d;
    d.node = node_policy;
    d.gpu = "tessera,binpack";  // among GPUs that fragment alike, the fullest
    return d;
  }
  // Registers the replayed cluster's nodes (in its node order) with the scheduler's state.
  void Bind(const ReplayCluster& cluster) {
    bound_ = true;
    for (int i = 0; i < cluster.node_count(); ++i) {
      model::Node node;
      node.name = NodeName(i);
      node.allocatable["cpu"] = std::to_string(cluster.CpuCapacity(i)) + "m";
      if (cluster.GpuCount(i) > 0) {
        std::vector<model::GpuDevice> gpus;
        for (int g = 0; g < cluster.GpuCount(i); ++g) {
          model::GpuDevice d;
          d.uuid = GpuUuid(i, g);
          d.index = static_cast<uint32_t>(g);
          d.count = 1000;  // the trace has no task limit per GPU
          d.total_mem_mib = kMibPerGpu;
          d.total_cores = 100;
          // HAMi's NVIDIA backend takes only register entries whose type names NVIDIA; the
          // trace's models ("T4", "V100M16") do not, and a pod's gpu_spec still matches them
          // (nvidia.com/use-gputype matches a part of the type).
          d.type = "NVIDIA-" + cluster.model_names()[cluster.ModelId(i)];
          d.mode = "hami-core";
          d.healthy = true;
          gpus.push_back(std::move(d));
        }
        node.annotations[std::string(model::annotations::kNodeRegister)] =
            codec::EncodeNodeRegister(gpus);
      }
      state_.UpsertNode(node);
    }
    // ClusterState keeps nodes in a std::map: these pointers stay valid.
    nodes_.clear();
    for (int i = 0; i < cluster.node_count(); ++i) nodes_.push_back(state_.node(NodeName(i)));
  }

  static std::string NodeName(int i) { return "n" + std::to_string(i); }
  static int NodeIndex(const std::string& name) { return std::stoi(name.substr(1)); }

  model::Pod ToPod(const TracePod& tp) const {
    model::Pod p;
    p.ns = "trace";
    p.name = "pod-" + std::to_string(pod_counter_);
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

  // CPU-only pods: the node where the pod strands the least GPU capacity for the demand mix;
  // among equals, the node with the least free GPU capacity (host CPU next to used-up GPUs is
  // worth nothing to GPU pods), then the scheduler's fixed node order (NodeState::tie_order), so
  // that CPU-only and GPU pods fill the same nodes first. The tightest CPU fit instead puts them
  // on nodes whose GPUs are still free and strands those GPUs as the CPU runs out.
  std::optional<Choice> ChooseCpuOnly(const TracePod& pod, const std::vector<int>& nodes) {
    sched::DemandShape shape;
    shape.cpu_milli = pod.cpu_milli;
    scheduler_.ObserveDemand(shape);
    const auto& target = scheduler_.demand_mix().Target();
    const sched::PreparedTarget prepared(target);
    // The host CPU a GPU shape needs: the fragmentation only sees the node's free CPU through
    // these thresholds.
    cpu_thresholds_.clear();
    for (const auto& w : target) {
      if (w.shape.gpus > 0) cpu_thresholds_.push_back(w.shape.cpu_milli);
    }
    std::sort(cpu_thresholds_.begin(), cpu_thresholds_.end());
    delta_by_class_.assign(state_.state_class_bound(), std::numeric_limits<double>::quiet_NaN());
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
    state::PodReservation r;
    r.key = "trace/cpu-" + std::to_string(pod_counter_);
    r.node = NodeName(best);
    r.cpu_milli = pod.cpu_milli;
    reservations_.Place(std::move(r));
    return Choice{best, {}};
  }

  std::string name_;
  state::ClusterState state_;
  sched::Scheduler scheduler_;
  // The trace's pods never leave and are bound at once: nothing here expires.
  state::ReservationCache reservations_;
  std::vector<const state::NodeState*> nodes_;  // by replay node index
  // Reused from pod to pod.
  std::vector<const state::NodeState*> candidates_;
  std::vector<int> candidate_index_;
  std::vector<int64_t> cpu_thresholds_;
  std::vector<double> delta_by_class_;  // NaN: not worked out yet
  sched::NodeCapacity before_;
  sched::NodeCapacity after_;
  bool bound_ = false;
  uint64_t pod_counter_ = 0;
};

}  // namespace

std::unique_ptr<Policy> MakeTesseraPolicy(const TargetWorkload* prior,
                                          const sched::NodePolicy& node_policy) {
  return std::make_unique<TesseraPolicy>(prior, node_policy);
}

std::string TesseraPolicyName(const sched::NodePolicy& node_policy) {
  return "tessera:" + node_policy.name();
}

}  // namespace tessera::sim::replay
