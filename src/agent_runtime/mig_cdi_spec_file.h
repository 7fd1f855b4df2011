#pragma once

// The CDI spec file of the MIG instances tessera holds (docs/agent.md, "CDI"): with a CDI
// device-list strategy the agent hands out `<kind>=MIG-<uuid>`, and the container runtime finds
// that name only in a spec file. One file, `<dir>/tessera-mig.json`, lists every instance of
// the ledger that exists (created, not lost, with a MIG UUID); it is re-synced after every
// Allocate and reconcile, so destroyed instances leave it. Written atomically (temporary file,
// rename), 0644; removed when no instance is left (a spec without devices is invalid).

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "agent/mig_device_export.h"
#include "agent_runtime/agent_metrics.h"
#include "core/node/cdi_spec.h"
#include "core/node/gpu_driver.h"
#include "core/node/mig_reconcile.h"
#include "core/node/retry_backoff.h"

namespace tessera::agent_runtime {

struct MigCdiSpecOptions {
  std::string spec_dir = "/var/run/cdi";
  std::string file_name = "tessera-mig.json";
  std::string kind = "k8s.device-plugin.nvidia.com/gpu";  // must match the names handed out
  std::string proc_driver_root = "/proc/driver";          // the driver's device-node minors
};

class MigCdiSpecFile final : public agent::MigDeviceExport {
 public:
  using Ledger = std::function<std::vector<node::LedgerEntry>()>;
  // `metrics` may be null.
  MigCdiSpecFile(Ledger ledger, node::GpuDriver& driver, MigCdiSpecOptions options,
                 AgentMetrics* metrics);

  // Writes the spec when the instances held differ from those the file lists (or the file is
  // gone); the write's error, if any. Problems that leave a device out or incomplete are logged.
  Status Sync();
  Status Export(const std::vector<std::string>& mig_uuids) override;

  std::string path() const { return options_.spec_dir + "/" + options_.file_name; }
  uint64_t write_failures() const;

 private:
  Status WriteLocked(const std::set<std::string>& held,
                     const std::vector<node::MigCdiDevice>& devices,
                     std::vector<std::string>* problems);
  void LogLocked(const std::vector<std::string>& problems);

  Ledger ledger_;
  node::GpuDriver& driver_;
  MigCdiSpecOptions options_;
  AgentMetrics* metrics_;
  mutable std::mutex mu_;
  // MIG UUID -> its device: the ledger does not keep compute-instance ids, so each new MIG UUID
  // is looked up in the driver's listing once (a MIG UUID names one instance for its life).
  std::map<std::string, node::MigCdiDevice> known_;
  bool synced_ = false;            // the file was written (or removed) by this process
  std::set<std::string> written_;  // the MIG UUIDs the file lists
  std::string last_error_;         // the last write's error, "" after a success
  std::map<std::string, std::string> left_out_;  // MIG UUID -> why it is not in the file
  uint64_t write_failures_ = 0;
  node::RepeatedMessageLimiter log_limiter_;
};

}  // namespace tessera::agent_runtime
