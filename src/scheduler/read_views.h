#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

#include "core/sched/defrag.h"
#include "scheduler/cluster_view.h"

namespace tessera::scheduler {

// What /explain answers, before HTTP: the HTTP layer chooses the status code for the outcome.
struct ExplainResult {
  enum class Outcome {
    kOk,          // an explanation, or where the pod is placed
    kBadRequest,  // not a pod key (the body says why)
    kNotFound,    // not a pending pod this scheduler knows
  };
  Outcome outcome = Outcome::kOk;
  std::string body;
  bool json = false;  // the body is JSON; otherwise plain text
};

// What /defrag answers: the plan, and its encoding.
struct DefragResult {
  sched::DefragPlan plan;
  std::string body;
  bool json = false;
};

// /ui/state's body, and what names it: `version` moves whenever the body changes and
// `instance` tells this process's versions from another's (a restarted scheduler counts from 1
// again). The HTTP layer builds the ETag from the two.
struct UiStateBody {
  std::shared_ptr<const std::string> json;
  uint64_t version = 0;
  int64_t instance = 0;
  uint64_t usage_version = 0;  // the GPU usage's (GpuUsageTable), which moves on its own
};

// What operators and Prometheus read of the cluster view: /explain, /ui/state and the state's
// metric families. Each copies or encodes what it needs under the view's lock and does the rest
// outside it, so the filter path is held up only for the copy. Thread-safe.
class ReadViews {
 public:
  explicit ReadViews(const ClusterView& view);

  // Why pending pod `pod_key` (NAMESPACE/NAME) fits where it does or nowhere, per node and GPU,
  // and what would make it fit (sched::ExplainPod); `node`, when not empty, is shown with its
  // GPUs in full whatever else is. The remedy search runs outside the lock.
  ExplainResult Explain(std::string_view pod_key, bool json, const std::string& node = {}) const;

  // A defragmentation plan for the cluster as the view has it (sched::PlanDefrag, a dry run):
  // its pending pods, the movable pods' specs, the PodDisruptionBudgets and the demand the
  // scheduler observed are copied under the lock; the search runs outside it.
  DefragResult Defrag(const sched::DefragLimits& limits, bool json) const;

  // Every node and GPU (MIG slice maps, shared use and holders) and the pods waiting with the
  // last filter's message, as compact JSON (scheduler/ui_state.h), with the agents' measured GPU
  // usage as "usage" (GpuUsageTable::ToJson, its own lock). Under the view's lock only the nodes
  // that changed since the last poll are encoded; the body is joined outside it and reused while
  // nothing changes.
  UiStateBody UiState() const;

  // What /metrics adds to the counters: HAMi's GPU usage families, tessera's placement families
  // (PlacementFamilies, with the scheduler's MIG demand mix), the age of the oldest reservation
  // still waiting for its bind and the client-keyed maps' sizes, all read under one lock.
  std::vector<prometheus::MetricFamily> StateFamilies() const;
  // The same in the text format: each family built under the view's lock and serialized outside
  // it, then dropped, so that a scrape of 40 000 GPUs holds neither the lock nor the memory for
  // all of them at once (the families may then differ by what happened between two of them, as
  // any two scrapes do); with `legacy`, each device family's HAMi legacy twin follows them.
  std::string StateMetricsText(bool legacy) const;

 private:
  const ClusterView& view_;
  const int64_t instance_;    // this process's start, on the view's steady clock
  mutable std::mutex ui_mu_;  // the joined /ui body; taken after the view's lock is released
  mutable std::shared_ptr<const std::string> ui_body_;
  mutable uint64_t ui_version_ = 0;
  mutable uint64_t ui_usage_version_ = 0;
};

}  // namespace tessera::scheduler
