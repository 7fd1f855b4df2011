#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "adapters/kube/client.h"
#include "adapters/kube/event_recorder.h"
#include "adapters/kube/informer.h"
#include "adapters/kube/leader_election.h"
#include "adapters/kube/object_writes.h"
#include "core/common/result.h"
#include "scheduler/cluster_view.h"
#include "scheduler/cluster_writer.h"

namespace tessera::scheduler_runtime {

enum class LeaderElectionMode {
  kNone,      // always serve
  kCampaign,  // hold our own Lease (active-passive replicas of tessera)
  kFollow,    // serve while the kube-scheduler in the same pod holds its Lease (as HAMi does)
};

struct KubeClusterOptions {
  std::string kubeconfig;  // empty: $KUBECONFIG, in-cluster, ~/.kube/config
  std::string scheduler_name = "tessera-scheduler";
  LeaderElectionMode leader_election = LeaderElectionMode::kNone;
  std::string lease_namespace = "kube-system";
  std::string lease_name = "tessera-scheduler";
  std::string identity;  // campaign: our holder identity; follow: the prefix that marks our pod
  std::chrono::seconds node_lock_timeout{300};
  // The API client's settings (rate limit, timeouts) for Connect; WithConfig takes its own.
  kube::ClientOptions client;
};

// A real cluster through the API server: informers feed the cluster view, writes are merge patches,
// bindings and events, and the Lease decides which replica serves.
class KubeCluster : public scheduler::ClusterWriter {
 public:
  static Result<std::unique_ptr<KubeCluster>> Connect(const KubeClusterOptions& options);
  // With a configuration at hand (tests; programs that load it themselves).
  static std::unique_ptr<KubeCluster> WithConfig(const KubeClusterOptions& options,
                                                 kube::ClusterConfig config,
                                                 kube::ClientOptions client_options = {});
  ~KubeCluster() override;

  // Starts the informers (and leader election); the view turns ready once both have listed.
  void Start(scheduler::ClusterView& view);
  void Stop();
  // The API client (serve's delegated read checks share its connection and rate limit).
  kube::Client& client() { return client_; }

  Status PatchPodAnnotations(const scheduler::PodRef& pod,
                             const scheduler::AnnotationChanges& changes) override;
  Status BindPod(const scheduler::PodRef& pod, const std::string& node,
                 const scheduler::BindingAnnotations& annotations) override;
  void RecordEvent(const scheduler::PodRef& pod, bool warning, const std::string& reason,
                   const std::string& message) override;
  Status LockNode(const std::string& node, const scheduler::PodRef& pod) override;
  Status UnlockNode(const std::string& node, const scheduler::PodRef& pod) override;

 private:
  KubeCluster(KubeClusterOptions options, kube::ClusterConfig config,
              kube::ClientOptions client_options);
  void WatchSync(scheduler::ClusterView& view);
  void FollowLease(scheduler::ClusterView& view);

  KubeClusterOptions options_;
  kube::Client client_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<kube::Informer> nodes_;
  std::unique_ptr<kube::Informer> pods_;
  std::unique_ptr<kube::Informer> quotas_;
  std::unique_ptr<kube::Informer> budgets_;  // PodDisruptionBudgets
  std::unique_ptr<kube::Informer> jobs_;     // Jobs (their retries, for /defrag)
  std::unique_ptr<kube::LeaderElector> elector_;
  std::atomic<bool> stopping_{false};
  std::thread sync_thread_;
  std::thread follow_thread_;
};

}  // namespace tessera::scheduler_runtime
