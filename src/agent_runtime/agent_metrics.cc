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
