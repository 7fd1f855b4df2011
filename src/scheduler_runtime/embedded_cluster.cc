#include "scheduler_runtime/embedded_cluster.h"

#include <spdlog/spdlog.h>

namespace tessera::scheduler_runtime {

Status EmbeddedCluster::PatchPodAnnotations(const scheduler::PodRef& pod,
                                            const scheduler::AnnotationChanges& changes) {
  std::lock_guard lock(mu_);
  auto& stored = annotations_[pod.Key()];
  for (const auto& [k, v] : changes) {
    if (v) {
      stored[k] = *v;
    } else {
      stored.erase(k);
    }
  }
  return Status::Ok();
}

Status EmbeddedCluster::BindPod(const scheduler::PodRef& pod, const std::string& node,
                                const scheduler::BindingAnnotations& annotations) {
  std::lock_guard lock(mu_);
  auto [it, inserted] = bound_.emplace(pod.Key(), node);
  if (!inserted && it->second != node) {
    return Error{"pod " + pod.Key() + " is already bound to " + it->second};
  }
  for (const auto& [k, v] : annotations) annotations_[pod.Key()][k] = v;  // as the API server
  return Status::Ok();
}

void EmbeddedCluster::RecordEvent(const scheduler::PodRef& pod, bool warning,
                                  const std::string& reason, const std::string& message) {
  spdlog::info("event {} {} {}: {}", warning ? "Warning" : "Normal", pod.Key(), reason, message);
}

size_t EmbeddedCluster::Load(const sim::Scenario& scenario, scheduler::ClusterView& view) {
  for (const auto& node : scenario.nodes) view.UpsertNodeModel(node);
  for (const auto& quota : scenario.quotas) view.UpsertQuotaModel(quota);
  for (const auto& budget : scenario.budgets) view.UpsertDisruptionBudgetModel(budget);
  for (const auto& job : scenario.jobs) view.UpsertJobModel(job);
  size_t adopted = 0;
  for (const auto& step : scenario.steps) {
    if (step.kind != sim::ScenarioStep::Kind::kCreate) continue;
    if (step.pod.node_name.empty()) continue;  // only pods already placed are part of the cluster
    view.UpsertPodModel(step.pod);
    ++adopted;
  }
  view.SetSynced(true);
  return adopted;
}

std::map<std::string, std::string> EmbeddedCluster::Annotations(const std::string& pod_key) const {
  std::lock_guard lock(mu_);
  auto it = annotations_.find(pod_key);
  return it == annotations_.end() ? std::map<std::string, std::string>{} : it->second;
}

std::string EmbeddedCluster::BoundNode(const std::string& pod_key) const {
  std::lock_guard lock(mu_);
  auto it = bound_.find(pod_key);
  return it == bound_.end() ? std::string() : it->second;
}

}  // namespace tessera::scheduler_runtime
