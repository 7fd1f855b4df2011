#include "agent_runtime/agent_metrics.h"

namespace tessera::agent_runtime {

namespace {

prometheus::Counter& Counter(prometheus::Registry& r, const std::string& name,
                             const std::string& help, const prometheus::Labels& labels = {}) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r).Add(labels);
}

prometheus::Gauge& Gauge(prometheus::Registry& r, const std::string& name,
                         const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

}  // namespace

AgentMetrics::AgentMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      nvml_errors_(prometheus::BuildCounter()
                       .Name("tessera_agent_nvml_errors_total")
                       .Help("Failed NVML calls, by function and NVML return code")
                       .Register(*registry_)),
      created_(Counter(*registry_, "tessera_agent_mig_instances_created_total",
                       "MIG instances created for pods")),
      destroyed_(Counter(*registry_, "tessera_agent_mig_instances_destroyed_total",
                         "MIG instances destroyed after their pods ended")),
      adopted_(Counter(*registry_, "tessera_agent_mig_instances_adopted_total",
                       "MIG instances made before a crash, confirmed from their ledger intents")),
      registrations_(Counter(*registry_, "tessera_agent_registration_patches_total",
                             "Writes of hami.io/node-nvidia-register")),
      allocations_(prometheus::BuildCounter()
                       .Name("tessera_agent_allocations_total")
                       .Help("Kubelet Allocate calls, by result")
                       .Register(*registry_)),
      allocations_ok_(allocations_.Add({{"result", "success"}})),
      allocations_failed_(allocations_.Add({{"result", "failed"}})),
      reconcile_seconds_(Gauge(*registry_, "tessera_agent_reconcile_duration_seconds",
                               "Duration of the last MIG reconcile pass")),
      reconcile_time_(Gauge(*registry_, "tessera_agent_reconcile_last_timestamp_seconds",
                            "When the last MIG reconcile pass ended (reconcile lag = now - this)")),
      reconcile_errors_(Counter(*registry_, "tessera_agent_reconcile_errors_total",
                                "Errors met by reconcile passes")),
      unhealthy_(Gauge(*registry_, "tessera_agent_unhealthy_gpus", "GPUs marked unhealthy")),
      xid_unwatched_(Gauge(*registry_, "tessera_agent_xid_unwatched_gpus",
                           "Registered GPUs whose XID event registration failed (retried with "
                           "back-off; their XIDs are not seen meanwhile)")),
      foreign_(Gauge(*registry_, "tessera_agent_foreign_mig_instances",
                     "MIG instances tessera did not create (left alone; they occupy their "
                     "slices)")),
      recreated_(Counter(*registry_, "tessera_agent_mig_instances_recreated_total",
                         "Live pods' MIG instances recreated at their placements after a reboot, "
                         "GPU reset or driver reload")),
      lost_(Gauge(*registry_, "tessera_agent_lost_mig_instances",
                  "Live pods' MIG instances gone and not recreated (their slices are taken, or "
                  "the driver refused)")),
      pods_failed_(prometheus::BuildCounter()
                       .Name("tessera_agent_pods_failed_total")
                       .Help("Live pods set Failed because their MIG instance is gone for good "
                             "(reason: MigInstanceReplaced, MigInstanceLost)")
                       .Register(*registry_)),
      cdi_spec_write_failures_(
          Counter(*registry_, "tessera_agent_cdi_spec_write_failures_total",
                  "Failed writes of the CDI spec of tessera's MIG instances (MIG devices not in "
                  "it cannot be given to containers with a CDI device-list strategy)")) {
  RegisterMigModeMetrics();
  RegisterUsageMetrics();
}

void AgentMetrics::RegisterUsageMetrics() {
  auto gauge = [&](const std::string& name, const std::string& help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
  };
  gpu_utilization_.family =
      gauge("tessera_agent_gpu_utilization_percent",
            "NVML's GPU utilisation (percent of time a kernel ran) of each GPU, as last read; "
            "no series where NVML reports none (a GPU in MIG mode)");
  gpu_memory_used_.family =
      gauge("tessera_agent_gpu_memory_used_bytes", "NVML's memory used on each GPU, as last read");
  gpu_memory_total_.family =
      gauge("tessera_agent_gpu_memory_total_bytes", "NVML's memory of each GPU");
  mig_utilization_.family =
      gauge("tessera_agent_mig_instance_utilization_percent",
            "NVML's utilisation of each MIG device, where the driver reports one (usually not)");
  mig_memory_used_.family = gauge("tessera_agent_mig_instance_memory_used_bytes",
                                  "NVML's memory used on each MIG device, as last read");
  mig_memory_total_.family =
      gauge("tessera_agent_mig_instance_memory_total_bytes", "NVML's memory of each MIG device");
  usage_time_ = &gauge("tessera_agent_usage_last_read_timestamp_seconds",
                       "When GPU utilisation and memory were last read")
                     ->Add({});
}

void AgentMetrics::UsageFamily::Set(const SeriesValues& values) {
  for (auto it = series.begin(); it != series.end();) {
    if (values.count(it->first) == 0) {
      family->Remove(it->second);
      it = series.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [labels, value] : values) {
    auto& gauge = series[labels];
    if (gauge == nullptr) gauge = &family->Add(labels);
    gauge->Set(value);
  }
}

void AgentMetrics::GpuUsage(const std::string& node, const node::UsageReading& reading,
                            double unix_time) {
  constexpr double kMiB = 1024.0 * 1024.0;
  SeriesValues gpu_util, gpu_used, gpu_total, mig_util, mig_used, mig_total;
  for (const auto& g : reading.gpus) {
    const prometheus::Labels labels = {{"node", node},
                                       {"device_uuid", g.uuid},
                                       {"device_index", std::to_string(g.index)},
                                       {"device_type", g.name}};
    const auto& u = g.usage;
    if (u.utilization_percent) gpu_util[labels] = *u.utilization_percent;
    if (u.memory_used_mib) gpu_used[labels] = static_cast<double>(*u.memory_used_mib) * kMiB;
    if (u.memory_total_mib) gpu_total[labels] = static_cast<double>(*u.memory_total_mib) * kMiB;
    for (const auto& m : g.mig) {
      prometheus::Labels mig = labels;
      mig["mig_uuid"] = m.mig_uuid;
      mig["profile"] = m.profile;
      mig["placement_start"] = std::to_string(m.placement.start);
      mig["placement_size"] = std::to_string(m.placement.size);
      const auto& v = m.usage;
      if (v.utilization_percent) mig_util[mig] = *v.utilization_percent;
      if (v.memory_used_mib) mig_used[mig] = static_cast<double>(*v.memory_used_mib) * kMiB;
      if (v.memory_total_mib) mig_total[mig] = static_cast<double>(*v.memory_total_mib) * kMiB;
    }
  }
  gpu_utilization_.Set(gpu_util);
  gpu_memory_used_.Set(gpu_used);
  gpu_memory_total_.Set(gpu_total);
  mig_utilization_.Set(mig_util);
  mig_memory_used_.Set(mig_used);
  mig_memory_total_.Set(mig_total);
  usage_time_->Set(unix_time);
}

void AgentMetrics::RegisterMigModeMetrics() {
  mig_mode_off_ = &prometheus::BuildGauge()
                       .Name("tessera_agent_mig_mode_off_gpus")
                       .Help(
                           "GPUs the node's mig operating mode wants in MIG mode whose MIG mode "
                           "is off (state=off) or waits for a GPU reset (state=reset-pending); "
                           "registered as migFallback says")
                       .Register(*registry_);
  MigModeOffGpus(0, 0);
  mig_mode_enable_ = &prometheus::BuildCounter()
                          .Name("tessera_agent_mig_mode_enable_total")
                          .Help(
                              "--set-mig-mode tries, by result: enabled, reset-pending, busy "
                              "(compute processes on the GPU), failed")
                          .Register(*registry_);
}

void AgentMetrics::MigModeOffGpus(int off, int reset_pending) {
  mig_mode_off_->Add({{"state", "off"}}).Set(off);
  mig_mode_off_->Add({{"state", "reset-pending"}}).Set(reset_pending);
}

void AgentMetrics::MigModeEnableTried(const std::string& result) {
  mig_mode_enable_->Add({{"result", result}}).Increment();
}

void AgentMetrics::NvmlError(const std::string& function, int code) {
  nvml_errors_.Add({{"function", function}, {"code", std::to_string(code)}}).Increment();
}

void AgentMetrics::PodFailed(const std::string& reason) {
  pods_failed_.Add({{"reason", reason}}).Increment();
}

void AgentMetrics::Reconciled(double seconds, double unix_time, int errors) {
  reconcile_seconds_.Set(seconds);
  reconcile_time_.Set(unix_time);
  if (errors > 0) reconcile_errors_.Increment(errors);
}

}  // namespace tessera::agent_runtime
