#pragma once

#include <map>
#include <mutex>
#include <string>

#include "core/common/result.h"
#include "scheduler/cluster_view.h"
#include "scheduler/cluster_writer.h"
#include "sim/scenario.h"

namespace tessera::scheduler_runtime {

// `serve --cluster SCENARIO.yaml`: an in-memory cluster, so the extender can be tried with curl
// with no Kubernetes at all. Writes land in memory; the cluster view's own state is the truth.
class EmbeddedCluster : public scheduler::ClusterWriter {
 public:
  Status PatchPodAnnotations(const scheduler::PodRef& pod,
                             const scheduler::AnnotationChanges& changes) override;
  Status BindPod(const scheduler::PodRef& pod, const std::string& node,
                 const scheduler::BindingAnnotations& annotations) override;
  void RecordEvent(const scheduler::PodRef& pod, bool warning, const std::string& reason,
                   const std::string& message) override;
  Status LockNode(const std::string&, const scheduler::PodRef&) override { return Status::Ok(); }
  Status UnlockNode(const std::string&, const scheduler::PodRef&) override { return Status::Ok(); }

  // Feeds the scenario's nodes, and its pods that already carry a placement, to the view.
  // Returns how many pods were adopted.
  static size_t Load(const sim::Scenario& scenario, scheduler::ClusterView& view);

  // What has been written, for tests and the debug view.
  std::map<std::string, std::string> Annotations(const std::string& pod_key) const;
  std::string BoundNode(const std::string& pod_key) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, std::string>> annotations_;
  std::map<std::string, std::string> bound_;
};

}  // namespace tessera::scheduler_runtime
