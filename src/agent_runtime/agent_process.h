#pragma once

// `tessera agent`: the node agent's process. Discovers GPUs, publishes
// hami.io/node-nvidia-register when it changes, serves the kubelet device plugin, realizes MIG
// instances in Allocate, reconciles them with the pods on the node, and tracks GPU health.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "adapters/deviceplugin/plugin_server.h"
#include "agent/allocator.h"
#include "agent/foreign_mig_publisher.h"
#include "agent/mig_manager.h"
#include "agent/node_api.h"
#include "agent/registration_publisher.h"
#include "agent/unrecoverable_pods.h"
#include "agent_runtime/agent_metrics.h"
#include "agent_runtime/hami_core_host_folders.h"
#include "agent_runtime/mig_cdi_spec_file.h"
#include "core/node/gpu_driver.h"
#include "core/node/gpu_health.h"
#include "core/node/registration.h"
#include "core/node/retry_backoff.h"

namespace tessera::agent_runtime {

struct AgentOptions {
  std::string node_name;
  node::NodeDeviceConfig device;
  deviceplugin::PluginOptions plugin;
  agent::AllocatorConfig allocator;
  std::string ledger_path = "/var/lib/tessera/agent/mig-ledger.json";
  std::chrono::milliseconds register_interval{30000};
  std::chrono::milliseconds reconcile_interval{5000};
  std::chrono::milliseconds reconcile_grace{10000};  // young ledger entries are never destroyed
  int64_t health_recovery_ms = 300000;               // 0: unhealthy until restart
  std::string xid_disable, xid_enable;               // DP_DISABLE/ENABLE_HEALTHCHECKS
  bool reclaim_foreign = false;
  // --set-mig-mode: enable MIG mode on an idle GPU the node's "mig" mode wants in MIG mode.
  bool set_mig_mode = false;
  // A live pod whose MIG instance cannot be recreated for this long is failed (0: never); one
  // whose instance came back under a new MIG UUID is failed at once (agent/unrecoverable_pods.h).
  std::chrono::milliseconds fail_lost_after{60000};
  // NVML's utilisation and memory used, read this often for /metrics and tessera.io/gpu-usage
  // (0: never); that annotation rides on the registration's writes, and is written on its own
  // only when it changed and at most once per `usage_annotation_refresh` (0: never on its own).
  std::chrono::milliseconds usage_interval{10000};
  std::chrono::milliseconds usage_annotation_refresh{300000};
  std::string sysfs_root = "/sys";
  // HAMi-core's host folders (`<hook>/vgpu/containers/<podUID>_<container>`, the lock folder):
  // made at Allocate, removed once their pods are provably gone. Off unless asked for, so a
  // process in a test touches no host folder it was not given.
  bool manage_hami_core_folders = false;
  std::string vgpu_lock_dir = node::kVgpuLockDir;
  // With a CDI device-list strategy: the CDI spec of tessera's MIG instances, in this folder,
  // with device minors from the driver's /proc files under `driver_proc_root`.
  std::string cdi_spec_dir = "/var/run/cdi";
  std::string driver_proc_root = "/proc/driver";
  bool serve_kubelet = true;  // false: registration and reconcile only (no kubelet socket)
};

class AgentProcess final : public deviceplugin::DevicePluginBackend {
 public:
  // A failing kubelet registration is retried at most this far apart: the kubelet may come
  // back at any moment, and the agent is not ready until it registers.
  static constexpr int64_t kKubeletRetryMaxMs = 30000;
  // How often the ledger is checked for readiness.
  static constexpr int64_t kLedgerCheckMs = 2000;

  AgentProcess(node::GpuDriver& driver, agent::NodeApi& api, AgentOptions options,
               AgentMetrics* metrics);
  ~AgentProcess() override;

  // Loads the ledger, discovers, publishes and adopts (once `pods_synced` says the pod view is
  // complete), then serves the kubelet. Errors name what failed.
  Status Start(const std::function<bool()>& pods_synced);
  // The periodic work until `stop` is true.
  void Run(const std::function<bool()>& stop);
  void TriggerReconcile() { reconcile_now_ = true; }

  Status PublishRegistration();
  // One read of the GPUs' utilisation and memory used: into the metrics and the usage the next
  // registration pass publishes. A failed read is counted and logged, never fatal.
  void ReadUsage();
  agent::ReconcileReport Reconcile();
  // One pass of the health loop: registers the XID events of the registered GPUs not yet
  // watched (each on its own back-off), waits up to `timeout_ms` for XID events (or sleeps, when
  // none can be waited for), applies them and the recoveries; returns whether health changed.
  bool PollHealth(int timeout_ms);

  std::vector<node::PluginDevice> Devices() override;
  Result<std::vector<node::ContainerResponse>> Allocate(
      const std::vector<std::vector<std::string>>& container_requests) override;
  std::vector<std::vector<std::string>> Preferred(
      const std::vector<node::PreferredRequest>& requests) override;

  std::string last_registration() const;
  // MIG instances tessera did not create, as the last reconcile found them: they occupy their
  // slices, which no pod of tessera's can get.
  std::vector<node::DriverMigInstance> foreign_instances() const { return mig_.ForeignInstances(); }
  // Started, registered with the kubelet (when it serves one), and able to make MIG instances
  // when the node has MIG GPUs (their ledger can be written).
  bool ready() const {
    return ready_.load() && !mig_blocked_.load() && (!plugin_ || plugin_->registered());
  }

 private:
  int32_t NumaOf(const std::string& pci_bus_id) const;
  void SyncMigCounters();  // the MIG manager's counts into the metrics
  // After a reconcile or an Allocate: the CDI spec re-synced with the ledger and, with a pod
  // view, the folders of pods it proves gone removed; their errors go to `problems`.
  void SyncHostFiles(const agent::PodView* view, std::vector<std::string>* problems);
  // Reads each pod from the API server (once per pass) to prove it gone for good, for the
  // entries that wait only on a fresher pod view.
  agent::GoneProofs ProveGone(const std::vector<node::PodRef>& pods);
  // Tells the scheduler which slices the instances tessera did not create take (the node
  // annotation, an Event when they change); logs a failure once per retry.
  void PublishForeignInstances(const agent::ReconcileReport& report);
  // Logs (and records on the pod) what a reconcile found that needs a person, once each.
  // Fails the live pods whose instance is gone for good (UnrecoverablePods), with an Event each.
  void FailUnrecoverablePods(const agent::ReconcileReport& report,
                             const std::vector<model::Pod>* pods);
  void ReportOnce(const agent::ReconcileReport& report, const std::vector<model::Pod>* pods);
  int64_t NowMs() const;
  static int64_t SteadyMs();
  // Registers the XID events of the registered GPUs whose watch is due; one log line per pass
  // that failed, naming each GPU.
  void WatchXidOfRegisteredGpus();
  // Sleeps up to `ms`, waking early when the process stops.
  void PauseHealth(int ms) const;
  // Whether the ledger can be written when MIG GPUs need it; readiness follows.
  void CheckLedger();
  // The kubelet's registration, retried with back-off after a failure.
  void KeepKubeletRegistration(int64_t now_ms);

  node::GpuDriver& driver_;
  agent::NodeApi& api_;
  AgentOptions options_;
  AgentMetrics* metrics_;
  agent::MigManager mig_;
  std::unique_ptr<HamiCoreHostFolders> hami_core_folders_;  // null unless managed
  std::unique_ptr<MigCdiSpecFile> cdi_spec_;                // null without a CDI strategy
  agent::Allocator allocator_;
  agent::RegistrationPublisher publisher_;
  std::unique_ptr<deviceplugin::DevicePluginServer> plugin_;
  node::XidPolicy xid_policy_;
  // The health thread's own: which GPUs' XIDs are received, and the XID wait's back-off.
  node::XidWatches xid_watches_;
  node::RetryBackoff xid_wait_backoff_;
  // The Run loop's own: back-off for the registration annotation and the kubelet registration.
  node::RetryBackoff publish_backoff_;
  // The reconcile's own: tessera.io/foreign-mig-instances and its Events.
  agent::ForeignMigPublisher foreign_mig_;
  node::RetryBackoff kubelet_backoff_{node::RetryBackoff::kDefaultInitialMs, kKubeletRetryMaxMs};
  // The Run loop's own: a usage read the driver does not support is logged once.
  bool usage_unsupported_logged_ = false;
  std::string usage_problem_logged_;

  mutable std::mutex mu_;  // the fields below
  node::GpuHealth health_;
  std::vector<model::GpuDevice> registered_;
  std::string registration_;
  bool health_changed_ = false;

  std::mutex counters_mu_;
  uint64_t created_seen_ = 0;
  uint64_t destroyed_seen_ = 0;
  std::mutex reported_mu_;
  // What reconcile passes log: a problem they repeat, on its back-off.
  node::RepeatedMessageLimiter reconcile_problems_;
  std::set<std::string> foreign_reported_;  // "<pod uid> <instance>" already reported
  std::set<std::string> waiting_reported_;  // destroys held back, already logged
  agent::UnrecoverablePods unrecoverable_;  // live pods to fail: their instance is gone for good
  std::set<std::string> lost_reported_;     // "<pod uid> <placement>" lost instances reported
  std::atomic<bool> reconcile_now_{false};
  std::atomic<bool> ready_{false};
  std::atomic<bool> mig_blocked_{false};  // MIG GPUs, and a ledger that cannot be written
  std::atomic<bool> stopping_{false};
  std::thread health_thread_;
};

}  // namespace tessera::agent_runtime
