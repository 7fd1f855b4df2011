#include "scheduler/service_metrics.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <optional>

#include <prometheus/text_serializer.h>

#include "core/sched/defrag_format.h"

namespace tessera::scheduler {
namespace {

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
  return kBuckets;
}

prometheus::ClientMetric Gauge(std::vector<prometheus::ClientMetric::Label> labels, double value) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  return m;
}

}  // namespace

ServiceMetrics::ServiceMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  filter_total_ = &prometheus::BuildCounter()
                       .Name("tessera_filter_requests_total")
                       .Help("Filter calls by outcome")
                       .Register(*registry_);
  filter_seconds_ = &prometheus::BuildHistogram()
                         .Name("tessera_filter_duration_seconds")
                         .Help("Time to answer a filter call, including annotation writes")
                         .Register(*registry_);
  bind_total_ = &prometheus::BuildCounter()
                     .Name("tessera_bind_requests_total")
                     .Help("Bind calls by outcome")
                     .Register(*registry_);
  bind_seconds_ = &prometheus::BuildHistogram()
                       .Name("tessera_bind_duration_seconds")
                       .Help("Time to answer a bind call")
                       .Register(*registry_);
  webhook_total_ = &prometheus::BuildCounter()
                        .Name("tessera_webhook_requests_total")
                        .Help("Admission reviews by outcome")
                        .Register(*registry_);
  preempt_total_ = &prometheus::BuildCounter()
                        .Name("tessera_preempt_requests_total")
                        .Help("Preempt calls by outcome")
                        .Register(*registry_);
  preempt_seconds_ = &prometheus::BuildHistogram()
                          .Name("tessera_preempt_duration_seconds")
                          .Help("Time to answer a preempt call")
                          .Register(*registry_);
  preempt_nodes_ = &prometheus::BuildCounter()
                        .Name("tessera_preempt_nodes_total")
                        .Help(
                            "Candidate nodes of preempt calls by verdict: victims chosen by GPU "
                            "need, kube-scheduler's victims passed on, dropped, or over_budget "
                            "(left out past the request's fit budget)")
                        .Register(*registry_);
  decode_errors_ = &prometheus::BuildCounter()
                        .Name("tessera_decode_errors_total")
                        .Help("Cluster objects skipped because they could not be decoded")
                        .Register(*registry_);
  unschedulable_ = &prometheus::BuildCounter()
                        .Name("tessera_filter_unschedulable_reasons_total")
                        .Help("Filter calls that placed the pod nowhere, by reason among the nodes")
                        .Register(*registry_);
  expired_ = &prometheus::BuildCounter()
                  .Name("tessera_reservations_expired_total")
                  .Help("Reservations released because no bind confirmed them in time")
                  .Register(*registry_)
                  .Add({});
  requeued_ = &prometheus::BuildCounter()
                   .Name("tessera_requeued_pods_total")
                   .Help(
                       "Waiting pods asked to be tried again because capacity came free after "
                       "their last filter and kube-scheduler would not ask on its own")
                   .Register(*registry_)
                   .Add({});
  placed_in_bind_ = &prometheus::BuildCounter()
                         .Name("tessera_binds_placed_at_bind_total")
                         .Help(
                             "Binds of pods no filter of this replica had placed (a restart or a "
                             "new leader between filter and bind), placed on the bind's node then")
                         .Register(*registry_)
                         .Add({});
  nominated_held_ = &prometheus::BuildCounter()
                         .Name("tessera_nominated_pod_holds_total")
                         .Help(
                             "Devices held for a pod kube-scheduler nominated after preemption, "
                             "from when its victims were gone until its own filter")
                         .Register(*registry_)
                         .Add({});
  defrag_steered_ = &prometheus::BuildCounter()
                         .Name("tessera_defrag_steered_pods_total")
                         .Help(
                             "Pods placed on the node a defragmentation run planned for them, "
                             "replacing a pod it evicted (annotation tessera.io/defrag-moving-to)")
                         .Register(*registry_)
                         .Add({});
  locked_nodes_avoided_ = &prometheus::BuildCounter()
                               .Name("tessera_filter_locked_nodes_avoided_total")
                               .Help(
                                   "Filters (with --node-lock=hami) that chose a node no other "
                                   "pod's node lock holds over a better one that is locked, "
                                   "where the bind would have failed with node lock contention")
                               .Register(*registry_)
                               .Add({});
  defrag_plans_ = &prometheus::BuildCounter()
                       .Name("tessera_defrag_plans_total")
                       .Help(
                           "Defragmentation plans made for /defrag (dry runs), by mode: "
                           "admit-pending, raise-placeability or nothing")
                       .Register(*registry_);
  defrag_evictions_ = &prometheus::BuildCounter()
                           .Name("tessera_defrag_planned_evictions_total")
                           .Help("Evictions in the defragmentation plans made for /defrag")
                           .Register(*registry_)
                           .Add({});
  defrag_admissions_ =
      &prometheus::BuildCounter()
           .Name("tessera_defrag_planned_admissions_total")
           .Help(
               "Pending pods the defragmentation plans made for /defrag admit (per eviction: "
               "divided by tessera_defrag_planned_evictions_total)")
           .Register(*registry_)
           .Add({});
  defrag_placeability_ =
      &prometheus::BuildGauge()
           .Name("tessera_defrag_last_plan_mig_placeability_gib")
           .Help(
               "The last /defrag plan's MIG placeability for the observed demand, before and "
               "after its evictions (docs/defrag.md)")
           .Register(*registry_);
  defrag_fragmentation_ =
      &prometheus::BuildGauge()
           .Name("tessera_defrag_last_plan_sharing_fragmentation_gpus")
           .Help(
               "The last /defrag plan's sharing fragmentation for the observed demand, before "
               "and after its evictions (docs/defrag.md)")
           .Register(*registry_);
  defrag_runs_ = &prometheus::BuildCounter()
                      .Name("tessera_defrag_executions_total")
                      .Help(
                          "Plans the defrag controller (--defrag-interval) carried out, by "
                          "result: delivered (every step) or stopped")
                      .Register(*registry_);
  defrag_evicted_ = &prometheus::BuildCounter()
                         .Name("tessera_defrag_evictions_total")
                         .Help("Pods the defrag controller evicted")
                         .Register(*registry_)
                         .Add({});
  defrag_admitted_ = &prometheus::BuildCounter()
                          .Name("tessera_defrag_admitted_pods_total")
                          .Help(
                              "Pending pods bound where the defrag controller made room for them "
                              "(per eviction: divided by tessera_defrag_evictions_total)")
                          .Register(*registry_)
                          .Add({});
  pending_ = &prometheus::BuildGauge()
                  .Name("tessera_pending_reservations")
                  .Help("Reservations made by filter and not yet bound")
                  .Register(*registry_)
                  .Add({});
}

void ServiceMetrics::FilterDone(const std::string& result, double seconds) {
  filter_total_->Add({{"result", result}}).Increment();
  filter_seconds_->Add({}, LatencyBuckets()).Observe(seconds);
}

void ServiceMetrics::BindDone(const std::string& result, double seconds) {
  bind_total_->Add({{"result", result}}).Increment();
  bind_seconds_->Add({}, LatencyBuckets()).Observe(seconds);
}

void ServiceMetrics::WebhookDone(const std::string& result) {
  webhook_total_->Add({{"result", result}}).Increment();
}

void ServiceMetrics::PreemptDone(const std::string& result, double seconds) {
  preempt_total_->Add({{"result", result}}).Increment();
  preempt_seconds_->Add({}, LatencyBuckets()).Observe(seconds);
}

void ServiceMetrics::PreemptNodes(const std::string& verdict, size_t n) {
  if (n > 0) preempt_nodes_->Add({{"verdict", verdict}}).Increment(static_cast<double>(n));
}

void ServiceMetrics::DecodeError(const std::string& kind) {
  decode_errors_->Add({{"kind", kind}}).Increment();
}

void ServiceMetrics::ReservationsExpired(size_t n) { expired_->Increment(static_cast<double>(n)); }

void ServiceMetrics::Requeued(size_t n) { requeued_->Increment(static_cast<double>(n)); }

void ServiceMetrics::BindPlacedHere() { placed_in_bind_->Increment(); }

void ServiceMetrics::NominatedPodHeld() { nominated_held_->Increment(); }
void ServiceMetrics::DefragMoveSteered() { defrag_steered_->Increment(); }

void ServiceMetrics::LockedNodesAvoided() { locked_nodes_avoided_->Increment(); }

void ServiceMetrics::DefragExecuted(int evictions, int admitted, bool delivered) {
  defrag_runs_->Add({{"result", delivered ? "delivered" : "stopped"}}).Increment();
  defrag_evicted_->Increment(static_cast<double>(evictions));
  defrag_admitted_->Increment(static_cast<double>(admitted));
}

void ServiceMetrics::DefragPlanned(const sched::DefragPlan& plan) {
  defrag_plans_->Add({{"mode", std::string(sched::DefragModeName(plan.mode))}}).Increment();
  defrag_evictions_->Increment(static_cast<double>(plan.steps.size()));
  size_t admitted_by_evictions = 0;
  for (const auto& a : plan.admitted) admitted_by_evictions += a.evicted.empty() ? 0 : 1;
  defrag_admissions_->Increment(static_cast<double>(admitted_by_evictions));
  defrag_placeability_->Add({{"when", "before"}}).Set(plan.before.mig_placeability);
  defrag_placeability_->Add({{"when", "after"}}).Set(plan.after.mig_placeability);
  defrag_fragmentation_->Add({{"when", "before"}}).Set(plan.before.sharing_fragmentation);
  defrag_fragmentation_->Add({{"when", "after"}}).Set(plan.after.sharing_fragmentation);
}

void ServiceMetrics::SetPending(size_t n) { pending_->Set(static_cast<double>(n)); }

void ServiceMetrics::Unschedulable(const std::set<std::string>& reasons) {
  for (const auto& r : reasons) unschedulable_->Add({{"reason", r}}).Increment();
}

std::string ServiceMetrics::Render(const std::vector<prometheus::MetricFamily>& extra) const {
  auto families = registry_->Collect();
  families.insert(families.end(), extra.begin(), extra.end());
  return prometheus::TextSerializer().Serialize(families);
}

std::string ServiceMetrics::RenderWith(const std::string& state_text,
                                       const std::vector<prometheus::MetricFamily>& extra) const {
  const prometheus::TextSerializer serializer;
  std::string text = serializer.Serialize(registry_->Collect());
  text.reserve(text.size() + state_text.size());
  text += state_text;
  text += serializer.Serialize(extra);
  return text;
}

prometheus::MetricFamily ClientKeyedFamily(const std::map<std::string, size_t>& entries) {
  prometheus::MetricFamily family{
      "tessera_client_keyed_entries",
      "Entries of the scheduler's memory keyed by what clients send (pod keys of filter and bind "
      "requests, their node lists), by map: each is bounded (docs/serve.md, Limits)",
      prometheus::MetricType::Gauge,
      {}};
  for (const auto& [map, size] : entries) {
    family.metric.push_back(Gauge({{"map", map}}, static_cast<double>(size)));
  }
  return family;
}

namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<prometheus::ClientMetric::Label>;
constexpr double kMiB = 1024.0 * 1024.0;

Labels DeviceLabels(const state::NodeState& node, const model::GpuDevice& dev) {
  return {{"zone", "vGPU"},
          {"node", node.name},
          {"device_uuid", dev.uuid},
          {"device_index", std::to_string(dev.index)},
          {"device_type", dev.type}};
}

// One gauge per device of every node, valued by `value(node, device index)`.
MetricFamily PerDevice(const state::ClusterState& state, std::string name, std::string help,
                       const std::function<double(const state::NodeState&, size_t)>& value) {
  MetricFamily family{std::move(name), std::move(help), MetricType::Gauge, {}};
  for (const auto* node : state.node_list()) {
    for (size_t d = 0; d < node->devices.size(); ++d) {
      family.metric.push_back(Gauge(DeviceLabels(*node, node->devices[d]), value(*node, d)));
    }
  }
  return family;
}

std::vector<MetricFamily> QuotaFamilies(const state::ClusterState& state) {
  // Quotas as HAMi reports them: per namespace and resource, the use (MiB for memory) and the
  // limit (as written; the tightest when several quotas set it).
  MetricFamily quota_used{"hami_resource_quota_used",
                          "GPU use counted against each namespace's quota",
                          MetricType::Gauge,
                          {}};
  MetricFamily quota_limit{
      "hami_resource_quota_limit", "GPU quota of each namespace", MetricType::Gauge, {}};
  const state::QuotaBook& quotas = state.quotas();
  for (const auto& namespace_quotas : quotas.namespaces()) {
    const std::string& ns = namespace_quotas.first;  // a plain reference: the lambda captures it
    const state::QuotaBook::Namespace& entry = namespace_quotas.second;
    std::optional<int64_t> mem_limit_value;
    std::optional<int64_t> cores_limit_value;
    for (const auto& [name, limits] : entry.quotas) {
      if (limits.mem) mem_limit_value = std::min(mem_limit_value.value_or(INT64_MAX), *limits.mem);
      if (limits.cores) {
        cores_limit_value = std::min(cores_limit_value.value_or(INT64_MAX), *limits.cores);
      }
    }
    auto report = [&](const std::string& key, std::optional<int64_t> limit, int64_t used) {
      if (!limit) return;
      const std::string resource = key.substr(std::string("limits.").size());
      quota_used.metric.push_back(Gauge({{"zone", "vGPU"},
                                         {"namespace", ns},
                                         {"quota_name", resource},
                                         {"limit", std::to_string(*limit)}},
                                        static_cast<double>(used)));
      quota_limit.metric.push_back(
          Gauge({{"zone", "vGPU"}, {"namespace", ns}, {"quota_name", resource}},
                static_cast<double>(*limit)));
    };
    report(quotas.memory_key(), mem_limit_value, entry.used.mem);
    report(quotas.core_key(), cores_limit_value, entry.used.cores);
  }
  return {std::move(quota_used), std::move(quota_limit)};
}

// hami_node_gpu_mig_instance_info and tessera_foreign_mig_instances, in one pass.
std::vector<MetricFamily> MigInstanceFamilies(const state::ClusterState& state) {
  MetricFamily mig{"hami_node_gpu_mig_instance_info",
                   "MIG instances reserved on each device",
                   MetricType::Gauge,
                   {}};
  MetricFamily foreign{"tessera_foreign_mig_instances",
                       "MIG instances tessera did not create on each node's GPUs in MIG mode, as "
                       "its agent reports them (tessera.io/foreign-mig-instances): their slices "
                       "are not offered",
                       MetricType::Gauge,
                       {}};
  for (const auto* node : state.node_list()) {
    int foreign_instances = 0;
    for (size_t d = 0; d < node->devices.size(); ++d) {
      const auto& dev = node->devices[d];
      for (const auto& inst : node->instances[d]) {
        if (inst.foreign) {  // held by no pod: counted on its own below
          ++foreign_instances;
          continue;
        }
        Labels mig_labels = {{"zone", "vGPU"},
                             {"node", node->name},
                             {"device_uuid", dev.uuid},
                             {"device_index", std::to_string(dev.index)},
                             {"pod", inst.pod_key},
                             {"profile", inst.profile_name},
                             {"placement_start", std::to_string(inst.placement.start)},
                             {"placement_size", std::to_string(inst.placement.size)}};
        mig.metric.push_back(Gauge(std::move(mig_labels), 1));
      }
    }
    if (node->any_mig) {
      foreign.metric.push_back(
          Gauge({{"node", node->name}}, static_cast<double>(foreign_instances)));
    }
  }
  return {std::move(mig), std::move(foreign)};
}

// One family, as a builder's single result.
StateFamilyBuilder One(std::function<MetricFamily(const state::ClusterState&)> build) {
  return [build = std::move(build)](const state::ClusterState& state) {
    std::vector<MetricFamily> out;
    out.push_back(build(state));
    return out;
  };
}

std::vector<MetricFamily> BuildAll(const std::vector<StateFamilyBuilder>& builders,
                                   const state::ClusterState& state) {
  std::vector<MetricFamily> families;
  for (const auto& build : builders) {
    for (auto& family : build(state)) families.push_back(std::move(family));
  }
  return families;
}

}  // namespace

std::vector<StateFamilyBuilder> GpuUsageFamilyBuilders() {
  std::vector<StateFamilyBuilder> builders;
  builders.push_back(One([](const state::ClusterState& state) {
    return PerDevice(state, "hami_gpu_memory_limit_bytes", "GPU memory of each device",
                     [](const state::NodeState& n, size_t d) {
                       return static_cast<double>(n.devices[d].total_mem_mib) * kMiB;
                     });
  }));
  builders.push_back(One([](const state::ClusterState& state) {
    return PerDevice(state, "hami_gpu_core_limit_ratio", "GPU cores of each device",
                     [](const state::NodeState& n, size_t d) {
                       return static_cast<double>(n.devices[d].total_cores);
                     });
  }));
  builders.push_back(One([](const state::ClusterState& state) {
    MetricFamily mem_used{"hami_gpu_memory_allocated_bytes",
                          "GPU memory allocated on each device",
                          MetricType::Gauge,
                          {}};
    for (const auto* node : state.node_list()) {
      for (size_t d = 0; d < node->devices.size(); ++d) {
        const auto& use = node->usage[d];
        Labels labels = DeviceLabels(*node, node->devices[d]);
        labels.push_back({"device_cores", std::to_string(use.used_cores)});
        mem_used.metric.push_back(
            Gauge(std::move(labels), static_cast<double>(use.used_mem) * kMiB));
      }
    }
    return mem_used;
  }));
  builders.push_back(One([](const state::ClusterState& state) {
    return PerDevice(
        state, "hami_gpu_shared_count", "Tasks sharing each device",
        [](const state::NodeState& n, size_t d) { return static_cast<double>(n.usage[d].used); });
  }));
  builders.push_back(One([](const state::ClusterState& state) {
    return PerDevice(state, "hami_gpu_core_allocated_ratio", "GPU cores allocated on each device",
                     [](const state::NodeState& n, size_t d) {
                       return static_cast<double>(n.usage[d].used_cores);
                     });
  }));
  // The order of the exposition: MIG instances, the quotas, then the foreign instances.
  builders.push_back([](const state::ClusterState& state) {
    std::vector<MetricFamily> out = MigInstanceFamilies(state);
    std::vector<MetricFamily> quotas = QuotaFamilies(state);
    out.insert(out.begin() + 1, std::make_move_iterator(quotas.begin()),
               std::make_move_iterator(quotas.end()));
    return out;
  });
  return builders;
}

std::vector<prometheus::MetricFamily> GpuUsageFamilies(const state::ClusterState& state) {
  return BuildAll(GpuUsageFamilyBuilders(), state);
}

std::optional<prometheus::MetricFamily> LegacyTwin(const prometheus::MetricFamily& family) {
  static const std::map<std::string, std::string> kNames = {
      {"hami_gpu_memory_limit_bytes", "GPUDeviceMemoryLimit"},
      {"hami_gpu_core_limit_ratio", "GPUDeviceCoreLimit"},
      {"hami_gpu_memory_allocated_bytes", "GPUDeviceMemoryAllocated"},
      {"hami_gpu_shared_count", "GPUDeviceSharedNum"},
      {"hami_gpu_core_allocated_ratio", "GPUDeviceCoreAllocated"},
      {"hami_resource_quota_used", "QuotaUsed"}};
  static const std::map<std::string, std::string> kLabels = {{"namespace", "quotanamespace"},
                                                             {"quota_name", "quotaName"},
                                                             {"node", "nodeid"},
                                                             {"device_uuid", "deviceuuid"},
                                                             {"device_index", "deviceidx"},
                                                             {"device_cores", "devicecores"},
                                                             {"device_type", "devicetype"}};
  auto name = kNames.find(family.name);
  if (name == kNames.end()) return std::nullopt;
  prometheus::MetricFamily old = family;
  old.name = name->second;
  for (auto& metric : old.metric) {
    for (auto& label : metric.label) {
      auto renamed = kLabels.find(label.name);
      if (renamed != kLabels.end()) label.name = renamed->second;
    }
  }
  return old;
}

std::vector<prometheus::MetricFamily> LegacyGpuUsageFamilies(
    const std::vector<prometheus::MetricFamily>& current) {
  std::vector<prometheus::MetricFamily> legacy;
  for (const auto& family : current) {
    if (auto twin = LegacyTwin(family)) legacy.push_back(std::move(*twin));
  }
  return legacy;
}

std::vector<StateFamilyBuilder> PlacementFamilyBuilders(const sched::MigWeights& weights) {
  using Value = std::function<double(const mig::GpuMigModel&, const state::DeviceUsage&)>;
  // One gauge per MIG GPU.
  auto per_mig_gpu = [](std::string name, std::string help, Value value) {
    return One([name = std::move(name), help = std::move(help),
                value = std::move(value)](const state::ClusterState& state) {
      MetricFamily family{name, help, MetricType::Gauge, {}};
      for (const auto* node : state.node_list()) {
        for (size_t d = 0; d < node->devices.size(); ++d) {
          const auto& dev = node->devices[d];
          if (!dev.IsMig()) continue;
          family.metric.push_back(Gauge({{"node", node->name},
                                         {"device_uuid", dev.uuid},
                                         {"device_index", std::to_string(dev.index)}},
                                        value(node->mig_models[d], node->usage[d])));
        }
      }
      return family;
    });
  };
  auto free_slices = [](const mig::GpuMigModel& model, const state::DeviceUsage& use) {
    return static_cast<double>(model.memory_slices()) -
           static_cast<double>(std::popcount(use.layout.occupied));
  };
  std::vector<StateFamilyBuilder> builders;
  builders.push_back(per_mig_gpu("tessera_gpu_free_memory_slices",
                                 "Free MIG memory slices of each MIG GPU", free_slices));
  builders.push_back(per_mig_gpu("tessera_gpu_largest_free_run_slices",
                                 "Longest run of free contiguous MIG memory slices of each MIG GPU",
                                 [](const mig::GpuMigModel& model, const state::DeviceUsage& use) {
                                   return static_cast<double>(model.LargestFreeRun(use.layout));
                                 }));
  builders.push_back(
      per_mig_gpu("tessera_gpu_largest_placeable_profile_bytes",
                  "Memory of the largest MIG profile still placeable on each MIG GPU",
                  [](const mig::GpuMigModel& model, const state::DeviceUsage& use) {
                    return static_cast<double>(model.LargestPlaceable(use.layout)) * kMiB;
                  }));
  builders.push_back(per_mig_gpu(
      "tessera_gpu_placeability",
      "Expected memory slices future requests (the scheduler's MIG demand mix) could still take",
      [&weights](const mig::GpuMigModel& model, const state::DeviceUsage& use) {
        return model.Placeability(use.layout, weights.For(model), weights.Stranded(model));
      }));
  // The cluster's two ratios, in one pass.
  builders.push_back([free_slices](const state::ClusterState& state) {
    double mig_free = 0, mig_outside_run = 0, shared_free = 0, shared_stranded = 0;
    for (const auto* node : state.node_list()) {
      for (size_t d = 0; d < node->devices.size(); ++d) {
        const auto& dev = node->devices[d];
        const auto& use = node->usage[d];
        if (!dev.IsMig()) {
          const double free =
              static_cast<double>(std::max<int64_t>(0, dev.total_mem_mib - use.used_mem));
          shared_free += free;
          if (use.used >= dev.count || (dev.total_cores > 0 && use.used_cores >= dev.total_cores)) {
            shared_stranded += free;
          }
          continue;
        }
        const mig::GpuMigModel& model = node->mig_models[d];
        const double slices = free_slices(model, use);
        mig_free += slices;
        mig_outside_run += slices - static_cast<double>(model.LargestFreeRun(use.layout));
      }
    }
    std::vector<MetricFamily> out;
    out.push_back(
        MetricFamily{"tessera_cluster_mig_fragmentation_ratio",
                     "Free MIG memory slices outside each GPU's largest free run, over all free",
                     MetricType::Gauge,
                     {Gauge({}, mig_free > 0 ? mig_outside_run / mig_free : 0)}});
    out.push_back(MetricFamily{
        "tessera_cluster_sharing_stranded_memory_ratio",
        "Free memory of shared GPUs whose cores or task slots are used up, over all free",
        MetricType::Gauge,
        {Gauge({}, shared_free > 0 ? shared_stranded / shared_free : 0)}});
    return out;
  });
  return builders;
}

std::vector<prometheus::MetricFamily> PlacementFamilies(const state::ClusterState& state,
                                                        const sched::MigWeights& weights) {
  return BuildAll(PlacementFamilyBuilders(weights), state);
}

}  // namespace tessera::scheduler
