#pragma once

#include <memory>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include "core/state/cluster_state.h"

namespace tessera::service {

// The extender's own counters and latencies (prometheus-cpp objects are thread-safe).
class ServiceMetrics {
 public:
  ServiceMetrics();

  void FilterDone(const std::string& result, double seconds);
  void BindDone(const std::string& result, double seconds);
  void WebhookDone(const std::string& result);
  void DecodeError(const std::string& kind);
  void ReservationsExpired(size_t n);
  void SetPending(size_t n);

  std::vector<prometheus::MetricFamily> Collect() const { return registry_->Collect(); }
  // Text exposition of these metrics plus `extra` (the GPU usage families).
  std::string Render(const std::vector<prometheus::MetricFamily>& extra) const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* filter_total_;
  prometheus::Family<prometheus::Histogram>* filter_seconds_;
  prometheus::Family<prometheus::Counter>* bind_total_;
  prometheus::Family<prometheus::Histogram>* bind_seconds_;
  prometheus::Family<prometheus::Counter>* webhook_total_;
  prometheus::Family<prometheus::Counter>* decode_errors_;
  prometheus::Counter* expired_;
  prometheus::Gauge* pending_;
};

// HAMi-compatible GPU usage gauges (hami-protocol.md 10.3) computed from the state, so that
// dashboards built for HAMi keep working.
std::vector<prometheus::MetricFamily> GpuUsageFamilies(const state::ClusterState& state);

// HAMi's legacy names (--legacy-metrics, hami-protocol.md 10.3) of the device families among
// `current` (GpuUsageFamilies' output): GPUDeviceMemoryLimit, GPUDeviceCoreLimit,
// GPUDeviceMemoryAllocated, GPUDeviceSharedNum, GPUDeviceCoreAllocated, with the same values and
// the labels renamed (node → nodeid, device_uuid → deviceuuid, device_index → deviceidx,
// device_cores → devicecores, device_type → devicetype; zone kept). Other families have no
// legacy twin here.
std::vector<prometheus::MetricFamily> LegacyGpuUsageFamilies(
    const std::vector<prometheus::MetricFamily>& current);

}  // namespace tessera::service
