#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include "core/sched/defrag.h"
#include "core/sched/mig_demand.h"
#include "core/state/cluster_state.h"

namespace tessera::scheduler {

// The extender's own counters and latencies (prometheus-cpp objects are thread-safe).
class ServiceMetrics {
 public:
  ServiceMetrics();

  void FilterDone(const std::string& result, double seconds);
  void BindDone(const std::string& result, double seconds);
  void WebhookDone(const std::string& result);
  // A preempt call: its outcome, and per candidate node what the search said (kept: victims
  // found, passed: kube-scheduler's own victims kept, dropped).
  void PreemptDone(const std::string& result, double seconds);
  void PreemptNodes(const std::string& verdict, size_t n);
  void DecodeError(const std::string& kind);
  void ReservationsExpired(size_t n);
  void Requeued(size_t n);
  // A bind placed its pod itself: no filter of this replica had (ClusterView::StartBind).
  void BindPlacedHere();
  // Room freed by preemption held for the nominated pod (ClusterView::Nomination).
  void NominatedPodHeld();
  // A replacement placed on the node a defragmentation move planned for it (DefragMoves).
  void DefragMoveSteered();
  // A filter chose a node no other pod's node lock holds over a better one that is locked.
  void LockedNodesAvoided();
  void SetPending(size_t n);
  // A /defrag plan (a dry run): counted by mode, with its evictions and the pending pods it
  // admits; the last plan's measures before and after.
  void DefragPlanned(const sched::DefragPlan& plan);
  // A plan carried out by serve's defrag controller: its evictions, the pods admitted, and
  // whether every step delivered.
  void DefragExecuted(int evictions, int admitted, bool delivered);
  // A filter that placed the pod nowhere: once per reason word among the nodes' reasons.
  void Unschedulable(const std::set<std::string>& reasons);

  std::vector<prometheus::MetricFamily> Collect() const { return registry_->Collect(); }
  // Text exposition of these metrics plus `extra` (the GPU usage families).
  std::string Render(const std::vector<prometheus::MetricFamily>& extra) const;
  // The same with `state_text` (ReadViews::StateMetricsText, already in the text format) between
  // these metrics and `extra`.
  std::string RenderWith(const std::string& state_text,
                         const std::vector<prometheus::MetricFamily>& extra) const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* filter_total_;
  prometheus::Family<prometheus::Histogram>* filter_seconds_;
  prometheus::Family<prometheus::Counter>* bind_total_;
  prometheus::Family<prometheus::Histogram>* bind_seconds_;
  prometheus::Family<prometheus::Counter>* webhook_total_;
  prometheus::Family<prometheus::Counter>* preempt_total_;
  prometheus::Family<prometheus::Histogram>* preempt_seconds_;
  prometheus::Family<prometheus::Counter>* preempt_nodes_;
  prometheus::Family<prometheus::Counter>* decode_errors_;
  prometheus::Family<prometheus::Counter>* unschedulable_;
  prometheus::Counter* expired_;
  prometheus::Counter* requeued_;
  prometheus::Counter* nominated_held_;
  prometheus::Counter* defrag_steered_;
  prometheus::Counter* locked_nodes_avoided_;
  prometheus::Counter* placed_in_bind_;
  prometheus::Gauge* pending_;
  prometheus::Family<prometheus::Counter>* defrag_plans_;
  prometheus::Counter* defrag_evictions_;
  prometheus::Counter* defrag_admissions_;
  prometheus::Family<prometheus::Gauge>* defrag_placeability_;
  prometheus::Family<prometheus::Gauge>* defrag_fragmentation_;
  prometheus::Family<prometheus::Counter>* defrag_runs_;
  prometheus::Counter* defrag_evicted_;
  prometheus::Counter* defrag_admitted_;
};

// tessera_client_keyed_entries{map}: the size of each map keyed by client input (pod keys named
// by filter and bind requests, their node lists), from ClusterView::ClientKeyedEntries.
prometheus::MetricFamily ClientKeyedFamily(const std::map<std::string, size_t>& entries);

// Builds one or a few of the state's metric families from the state (under the view's lock, so
// that a scrape can serialize each outside it and drop it before the next is built).
using StateFamilyBuilder =
    std::function<std::vector<prometheus::MetricFamily>(const state::ClusterState&)>;

// HAMi-compatible GPU usage gauges (hami-protocol.md 10.3) computed from the state, so that
// dashboards built for HAMi keep working; and tessera_foreign_mig_instances{node}, per node with
// GPUs in MIG mode, the instances tessera did not create (not in hami_node_gpu_mig_instance_info).
std::vector<prometheus::MetricFamily> GpuUsageFamilies(const state::ClusterState& state);
// The same families by builder, in the same order.
std::vector<StateFamilyBuilder> GpuUsageFamilyBuilders();

// tessera's own placement gauges (docs/serve.md, Metrics): per MIG GPU the free memory slices,
// the largest free run, the largest placeable profile's memory and the placeability under
// `weights` (the scheduler's demand mix); per cluster the MIG fragmentation (free slices outside
// each GPU's largest free run, as a share of all free slices) and the stranded shared memory
// (free memory on shared GPUs whose cores or task slots are used up, as a share of all free).
std::vector<prometheus::MetricFamily> PlacementFamilies(const state::ClusterState& state,
                                                        const sched::MigWeights& weights);
// The same families by builder, in the same order; they refer to `weights`.
std::vector<StateFamilyBuilder> PlacementFamilyBuilders(const sched::MigWeights& weights);

// HAMi's legacy names (--legacy-metrics, hami-protocol.md 10.3) of the device families among
// `current` (GpuUsageFamilies' output): GPUDeviceMemoryLimit, GPUDeviceCoreLimit,
// GPUDeviceMemoryAllocated, GPUDeviceSharedNum, GPUDeviceCoreAllocated, with the same values and
// the labels renamed (node → nodeid, device_uuid → deviceuuid, device_index → deviceidx,
// device_cores → devicecores, device_type → devicetype; zone kept). Other families have no
// legacy twin here.
std::vector<prometheus::MetricFamily> LegacyGpuUsageFamilies(
    const std::vector<prometheus::MetricFamily>& current);
// One family's legacy twin (nullopt when it has none).
std::optional<prometheus::MetricFamily> LegacyTwin(const prometheus::MetricFamily& family);

}  // namespace tessera::scheduler
