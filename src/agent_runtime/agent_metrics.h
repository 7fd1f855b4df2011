#pragma once

// The agent's Prometheus metrics (docs/agent.md, "Metrics").

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>

namespace tessera::agent_runtime {

class AgentMetrics {
 public:
  AgentMetrics();
  prometheus::Registry& registry() { return *registry_; }

  void InstancesCreated(double n) { created_.Increment(n); }
  void InstancesDestroyed(double n) { destroyed_.Increment(n); }
  void InstancesAdopted(int n) { adopted_.Increment(n); }
  void NvmlError(const std::string& function, int code);
  void Reconciled(double seconds, double unix_time, int errors);
  void RegistrationPatched() { registrations_.Increment(); }
  void Allocation(bool ok) { (ok ? allocations_ok_ : allocations_failed_).Increment(); }
  void UnhealthyGpus(int n) { unhealthy_.Set(n); }
  void XidUnwatchedGpus(int n) { xid_unwatched_.Set(n); }
  void ForeignInstances(int n) { foreign_.Set(n); }
  void InstancesRecreated(int n) { recreated_.Increment(n); }
  void LostInstances(int n) { lost_.Set(n); }
  // GPUs the node's "mig" mode wants in MIG mode whose MIG mode is off, or pending a reset.
  void MigModeOffGpus(int off, int reset_pending);
  // A --set-mig-mode try: enabled, reset-pending, busy, failed.
  void MigModeEnableTried(const std::string& result);
  // A live pod failed because its MIG instance is gone for good (reason: MigInstanceLost, ...).
  void PodFailed(const std::string& reason);
  // The CDI spec of the MIG instances could not be written (docs/agent.md, "CDI").
  void CdiSpecWriteFailed() { cdi_spec_write_failures_.Increment(); }

 private:
  void RegisterMigModeMetrics();

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& nvml_errors_;
  prometheus::Counter& created_;
  prometheus::Counter& destroyed_;
  prometheus::Counter& adopted_;
  prometheus::Counter& registrations_;
  prometheus::Family<prometheus::Counter>& allocations_;
  prometheus::Counter& allocations_ok_;
  prometheus::Counter& allocations_failed_;
  prometheus::Gauge& reconcile_seconds_;
  prometheus::Gauge& reconcile_time_;
  prometheus::Counter& reconcile_errors_;
  prometheus::Gauge& unhealthy_;
  prometheus::Gauge& xid_unwatched_;
  prometheus::Gauge& foreign_;
  prometheus::Counter& recreated_;
  prometheus::Gauge& lost_;
  prometheus::Family<prometheus::Gauge>* mig_mode_off_ = nullptr;
  prometheus::Family<prometheus::Counter>* mig_mode_enable_ = nullptr;
  prometheus::Family<prometheus::Counter>& pods_failed_;
  prometheus::Counter& cdi_spec_write_failures_;
};

}  // namespace tessera::agent_runtime
