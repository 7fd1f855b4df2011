#pragma once

// The agent's Prometheus metrics (docs/agent.md, "Metrics").

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <string>

#include "core/node/gpu_driver.h"

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
  // One usage read (docs/agent.md, "GPU usage"): a series per GPU and MIG device for each value
  // NVML reported (a value it did not report has no series: unknown, never 0); the series of
  // GPUs and MIG devices gone since the last read are removed.
  void GpuUsage(const std::string& node, const node::UsageReading& reading, double unix_time);
  // Failed usage reads (the whole read, or one GPU's or MIG device's value).
  void UsageReadFailed(int n) { usage_read_errors_.Increment(n); }
  void UsageAnnotationPatched() { usage_patches_.Increment(); }

 private:
  void RegisterMigModeMetrics();
  void RegisterUsageMetrics();
  // The series one usage read sets in `family`; the others it had are removed.
  using SeriesValues = std::map<prometheus::Labels, double>;
  struct UsageFamily {
    prometheus::Family<prometheus::Gauge>* family = nullptr;
    std::map<prometheus::Labels, prometheus::Gauge*> series;
    void Set(const SeriesValues& values);
  };

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
  UsageFamily gpu_utilization_;
  UsageFamily gpu_memory_used_;
  UsageFamily gpu_memory_total_;
  UsageFamily mig_utilization_;
  UsageFamily mig_memory_used_;
  UsageFamily mig_memory_total_;
  prometheus::Gauge* usage_time_ = nullptr;
  prometheus::Counter& usage_read_errors_ =
      prometheus::BuildCounter()
          .Name("tessera_agent_usage_read_errors_total")
          .Help(
              "Failed NVML usage reads: the whole read, or one GPU's or MIG device's value "
              "(its value is then unknown)")
          .Register(*registry_)
          .Add({});
  prometheus::Counter& usage_patches_ =
      prometheus::BuildCounter()
          .Name("tessera_agent_usage_annotation_patches_total")
          .Help(
              "Writes of tessera.io/gpu-usage (with the registration's, or on its own at most "
              "once per --usage-annotation-refresh)")
          .Register(*registry_)
          .Add({});
};

}  // namespace tessera::agent_runtime
