#pragma once

// One registration pass of the node agent, decided here and acted on through the ports:
// discovery (GpuDriver), MIG mode enabled where --set-mig-mode allows it, the registration
// built by HAMi's rules (core/node/registration.h), which GPUs are MIG, the Events that say why
// a GPU the node's "mig" mode wants is not in MIG mode, and hami.io/node-nvidia-register written
// when the node's copy differs (NodeApi). agent_runtime/ keeps the threads, timers and metrics.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/node_api.h"
#include "core/codec/gpu_usage.h"
#include "core/common/result.h"
#include "core/node/gpu_driver.h"
#include "core/node/registration.h"
#include "core/node/retry_backoff.h"

namespace tessera::agent {

// The NUMA node of a GPU by its PCI bus id (sysfs in production: I/O stays in agent_runtime).
using NumaLookup = std::function<int32_t(const std::string& pci_bus_id)>;

struct PublisherOptions {
  // --set-mig-mode: enable MIG mode on a GPU the "mig" node wants in MIG mode, when no compute
  // process uses it. Off by default: the driver may reset the GPU, and it needs root.
  bool set_mig_mode = false;
  // How long a refused or failed enable waits at most before it is tried again (back-off from
  // 1 s, doubling).
  int64_t set_mig_mode_retry_max_ms = node::RetryBackoff::kDefaultMaxMs;
  // tessera.io/gpu-usage rides on every write of the registration. When only the usage changed,
  // the node is written for it at most this often (0: never on its own), so 5 000 nodes add at
  // most 5 000 / refresh writes per second (docs/agent.md, "GPU usage").
  int64_t usage_refresh_ms = 300000;
};

// The usage annotation of one read: GPUs in index order, MIG instances by placement start,
// unknown values left unknown.
codec::NodeGpuUsage UsageAnnotation(const node::UsageReading& reading, int64_t unix_seconds);

// How a --set-mig-mode try ended, for the log and the metric's `result` label.
enum class MigModeEnableResult {
  kEnabled,       // MIG mode is on
  kResetPending,  // on after a GPU reset or reboot
  kBusy,          // compute processes use the GPU: not tried
  kFailed,        // the driver refused or failed (e.g. no permission)
};
const char* MigModeEnableResultName(MigModeEnableResult result);

// A Node Event the pass recorded, for the agent's log as well.
struct NodeNotice {
  std::string reason;
  std::string message;
  bool warning = true;
};

// What one pass found and did.
struct Publication {
  node::Registration registration;
  std::string annotation;             // hami.io/node-nvidia-register's value
  std::vector<std::string> mig_gpus;  // registered in MIG mode, by NVML index
  std::vector<std::string> problems;  // GPUs discovery could not read
  bool changed = false;               // the annotation differs from the last pass's
  bool patched = false;               // the registration was written
  bool usage_patched = false;         // tessera.io/gpu-usage was written (alone or with it)
  std::string usage_refused;          // the API server refused that key: why (said once)
  Status node_write;                  // reading or patching the node failed (retried next pass)
  std::vector<NodeNotice> notices;    // Events recorded this pass
  std::vector<MigModeEnableResult> enable_tries;  // --set-mig-mode tries this pass
};

// Not thread-safe: one pass at a time (the agent's Run loop and Start).
class RegistrationPublisher {
 public:
  RegistrationPublisher(node::GpuDriver& driver, NodeApi& api, node::NodeDeviceConfig config,
                        PublisherOptions options, NumaLookup numa,
                        std::function<int64_t()> steady_ms);

  // Fails only when discovery fails; a node that cannot be read or written is `node_write`.
  Result<Publication> Publish(const std::set<std::string>& unhealthy);
  // The usage the next passes publish (the agent's latest read).
  void SetUsage(codec::NodeGpuUsage usage) {
    if (!usage_refused_) usage_ = std::move(usage);
  }

 private:
  // Tries to enable MIG mode on each GPU whose turn it is; whether any mode changed.
  bool EnableMigMode(const node::Registration& planned, Publication* out);
  // Events for GPUs whose MIG mode is off or pending, once per change of state.
  void ReportMigModeOff(const node::Registration& reg, Publication* out);
  void Notice(Publication* out, const std::string& reason, const std::string& message,
              bool warning);

  node::GpuDriver& driver_;
  NodeApi& api_;
  node::NodeDeviceConfig config_;
  PublisherOptions options_;
  NumaLookup numa_;
  std::function<int64_t()> steady_ms_;
  std::string last_annotation_;
  std::optional<codec::NodeGpuUsage> usage_;
  std::optional<int64_t> last_usage_write_ms_;  // steady clock
  bool usage_refused_ = false;                  // the API server refused the key: never again
  // By GPU UUID: the MIG-mode state last reported ("off", "reset-pending"), the last
  // --set-mig-mode outcome reported, each GPU's back-off, and the driver's last activation
  // status (named in the reset-pending Event).
  std::map<std::string, std::string> reported_state_;
  std::map<std::string, std::string> reported_try_;
  std::map<std::string, node::RetryBackoff> enable_backoff_;
  std::map<std::string, std::string> activation_;
};

}  // namespace tessera::agent
