#pragma once

// NodeApi over the Kubernetes API: a pod informer limited to this node (spec.nodeName), direct
// reads and merge patches, and rate-limited Events.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "adapters/kube/client.h"
#include "adapters/kube/event_recorder.h"
#include "adapters/kube/informer.h"
#include "agent/node_api.h"

namespace tessera::agent_runtime {

class KubeNodeApi final : public agent::NodeApi {
 public:
  KubeNodeApi(kube::Client& client, std::string node_name);
  ~KubeNodeApi() override;

  // Starts the pod informer and the event sender; `on_pods_changed` runs (on the informer's
  // thread) after every change, e.g. to reconcile MIG instances soon after a pod ends.
  void Start(std::function<void()> on_pods_changed);
  void Stop();
  bool synced() const { return informer_ && informer_->HasSynced(); }

  agent::ApiResult<std::vector<model::Pod>> PodsOnNode(bool fresh) override;
  agent::ApiResult<agent::PodView> PodViewOnNode() override;
  agent::ApiResult<std::optional<model::Pod>> ReadPod(const std::string& ns,
                                                      const std::string& name) override;
  agent::ApiResult<model::Node> GetNode() override;
  agent::ApiResult<model::Pod> PatchPod(const model::Pod& pod, const agent::AnnotationPatch& patch,
                                        const std::string& resource_version) override;
  agent::ApiResult<model::Node> PatchNode(const agent::AnnotationPatch& patch,
                                          const std::string& resource_version) override;
  agent::ApiResult<model::Pod> FailPod(const model::Pod& pod, const std::string& reason,
                                       const std::string& message) override;
  void PodEvent(const model::Pod& pod, const std::string& reason, const std::string& message,
                bool warning) override;
  void NodeEvent(const std::string& reason, const std::string& message, bool warning) override;

  uint64_t api_errors() const { return api_errors_.load(); }

 private:
  void Upsert(const kube::Json& object);
  void Remove(const kube::Json& object);

  kube::Client& client_;
  const std::string node_name_;
  kube::EventRecorder events_;
  std::unique_ptr<kube::Informer> informer_;
  std::function<void()> on_change_;
  mutable std::mutex mu_;
  std::map<std::string, model::Pod> pods_;  // by uid
  std::atomic<uint64_t> api_errors_{0};
};

}  // namespace tessera::agent_runtime
