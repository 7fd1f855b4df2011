#include "agent_runtime/mig_cdi_spec_file.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>

#include "adapters/files/atomic_write.h"
#include "adapters/files/nvidia_proc.h"
#include "core/common/strings.h"

namespace tessera::agent_runtime {

namespace fs = std::filesystem;

namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

MigCdiSpecFile::MigCdiSpecFile(Ledger ledger, node::GpuDriver& driver, MigCdiSpecOptions options,
                               AgentMetrics* metrics)
    : ledger_(std::move(ledger)),
      driver_(driver),
      options_(std::move(options)),
      metrics_(metrics) {}

uint64_t MigCdiSpecFile::write_failures() const {
  std::lock_guard lock(mu_);
  return write_failures_;
}

Status MigCdiSpecFile::Sync() {
  std::lock_guard lock(mu_);
  std::vector<node::LedgerEntry> held;
  for (auto& e : ledger_()) {
    if (e.created && !e.lost && !e.mig_uuid.empty()) held.push_back(std::move(e));
  }
  std::vector<std::string> problems;
  std::set<std::string> to_list;
  for (const auto& e : held) {
    if (known_.count(e.mig_uuid) == 0) to_list.insert(e.gpu_uuid);
  }
  for (const std::string& gpu : to_list) {
    auto listed = driver_.ListInstances(gpu);
    if (!listed.ok()) {
      problems.push_back("CDI spec: listing the MIG instances of GPU " + gpu + ": " +
                         listed.error().message);
      continue;
    }
    for (const auto& i : listed.value()) {
      if (i.mig_uuid.empty() || !i.has_compute_instance) continue;
      known_[i.mig_uuid] = {i.mig_uuid, gpu, i.gpu_instance_id, i.compute_instance_id};
    }
  }
  std::map<std::string, node::MigCdiDevice> still_known;
  std::vector<node::MigCdiDevice> devices;
  std::set<std::string> in_spec;
  left_out_.clear();
  for (const auto& e : held) {
    const auto it = known_.find(e.mig_uuid);
    if (it == known_.end()) {
      const std::string why = "MIG device " + e.mig_uuid + " of pod " + e.pod + " on GPU " +
                              e.gpu_uuid + " is not listed by the driver";
      left_out_[e.mig_uuid] = why;
      problems.push_back("CDI spec: " + why + "; it is left out of " + path());
      continue;
    }
    still_known.insert(*it);
    devices.push_back(it->second);
    in_spec.insert(e.mig_uuid);
  }
  known_ = std::move(still_known);  // destroyed instances are forgotten

  std::error_code ec;
  const bool on_disk = fs::exists(path(), ec);
  Status status;
  if (!synced_ || !last_error_.empty() || in_spec != written_ || (!in_spec.empty() && !on_disk)) {
    status = WriteLocked(in_spec, devices, &problems);
  }
  LogLocked(problems);
  return status;
}

Status MigCdiSpecFile::WriteLocked(const std::set<std::string>& held,
                                   const std::vector<node::MigCdiDevice>& devices,
                                   std::vector<std::string>* problems) {
  Status status;
  std::error_code ec;
  if (held.empty()) {
    // A spec without devices is invalid to CDI runtimes: no instance, no file.
    fs::remove(path(), ec);
    if (ec) status = Error{path() + ": removing it failed: " + ec.message()};
  } else {
    const files::NvidiaProcMinors read = files::ReadNvidiaDeviceMinors(options_.proc_driver_root);
    const node::RenderedCdiSpec spec = node::RenderMigCdiSpec(options_.kind, devices, read.minors);
    if (!spec.problems.empty()) {
      // Without the driver's /proc files (the simulated NVML) only the control nodes are known.
      problems->push_back("CDI spec " + path() + ": device nodes left out (" +
                          Join(spec.problems, "; ") + ")" +
                          (read.problems.empty() ? "" : "; " + Join(read.problems, "; ")));
    }
    fs::create_directories(options_.spec_dir, ec);
    if (ec) {
      status = Error{options_.spec_dir + ": creating the CDI spec folder failed: " + ec.message()};
    } else {
      status = files::WriteFileAtomically(path(), spec.json, 0644);
    }
  }
  synced_ = true;
  if (status.ok()) {
    if (!last_error_.empty()) spdlog::info("CDI spec {} is written again", path());
    written_ = held;
    last_error_.clear();
  } else {
    // The file keeps what it listed before: a failed rename leaves the old content.
    last_error_ = status.message();
    ++write_failures_;
    if (metrics_ != nullptr) metrics_->CdiSpecWriteFailed();
    problems->push_back("CDI spec: " + last_error_ +
                        " (MIG devices not in it cannot be given to containers)");
  }
  return status;
}

void MigCdiSpecFile::LogLocked(const std::vector<std::string>& problems) {
  for (const auto& line : log_limiter_.Admit(problems, SteadyMs())) {
    if (line.repeats == 0) {
      spdlog::warn("{}", line.message);
    } else {
      spdlog::warn("{} (repeated by {} syncs since)", line.message, line.repeats);
    }
  }
}

Status MigCdiSpecFile::Export(const std::vector<std::string>& mig_uuids) {
  const Status synced = Sync();
  std::lock_guard lock(mu_);
  std::vector<std::string> missing;
  for (const auto& uuid : mig_uuids) {
    if (written_.count(uuid) > 0) continue;
    const auto why = left_out_.find(uuid);
    std::string reason;
    if (!synced.ok()) {
      reason = synced.message();
    } else if (why != left_out_.end()) {
      reason = why->second;
    } else {
      reason = "it is not in the MIG ledger";
    }
    missing.push_back(uuid + " (" + reason + ")");
  }
  if (missing.empty()) return Status::Ok();
  return Error{"MIG device(s) missing from the CDI spec " + path() +
               ", so the container runtime could not resolve their names (" + options_.kind +
               "=MIG-...): " + Join(missing, "; ")};
}

}  // namespace tessera::agent_runtime
