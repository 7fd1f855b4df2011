#include "agent_runtime/agent_process.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <random>
#include <sstream>

#include "agent/advertised_devices.h"
#include "agent/hami_core_sweep.h"
#include "agent/ledger_file.h"
#include "core/codec/node_register.h"
#include "core/common/strings.h"
#include "core/model/annotations.h"
#include "core/node/mig_claims.h"

namespace tessera::agent_runtime {

namespace {

const std::string kRegister(model::annotations::kNodeRegister);

std::string RandomUuid() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const uint64_t a = rng();
  const uint64_t b = rng();
  char out[40];
  std::snprintf(out, sizeof out, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xfff),
                static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3fff)),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return out;
}

}  // namespace

AgentProcess::AgentProcess(node::GpuDriver& driver, agent::NodeApi& api, AgentOptions options,
                           AgentMetrics* metrics)
    : driver_(driver),
      api_(api),
      options_(std::move(options)),
      metrics_(metrics),
      mig_(driver, agent::LedgerFile(options_.ledger_path), [this] { return NowMs(); }),
      hami_core_folders_(options_.manage_hami_core_folders
                             ? std::make_unique<HamiCoreHostFolders>(
                                   options_.allocator.hami_core.hook_path, options_.vgpu_lock_dir)
                             : nullptr),
      cdi_spec_(options_.allocator.strategy.cdi_cri || options_.allocator.strategy.cdi_annotations
                    ? std::make_unique<MigCdiSpecFile>(
                          [this] { return mig_.LedgerSnapshot(); }, driver,
                          MigCdiSpecOptions{options_.cdi_spec_dir, "tessera-mig.json",
                                            options_.allocator.strategy.cdi_kind,
                                            options_.driver_proc_root},
                          metrics)
                    : nullptr),
      allocator_(api, mig_, options_.allocator, RandomUuid, hami_core_folders_.get(),
                 cdi_spec_.get()),
      publisher_(
          driver, api, options_.device,
          agent::PublisherOptions{.set_mig_mode = options_.set_mig_mode,
                                  .usage_refresh_ms = options_.usage_annotation_refresh.count()},
          [this](const std::string& pci_bus_id) { return NumaOf(pci_bus_id); }, SteadyMs),
      xid_policy_(options_.xid_disable, options_.xid_enable),
      publish_backoff_(node::RetryBackoff::kDefaultInitialMs,
                       std::max<int64_t>(options_.register_interval.count(), 1)),
      foreign_mig_(api, options_.register_interval.count()),
      health_(options_.health_recovery_ms),
      unrecoverable_(options_.fail_lost_after.count()) {}

AgentProcess::~AgentProcess() {
  stopping_ = true;
  if (health_thread_.joinable()) health_thread_.join();
  if (plugin_) plugin_->Stop();
}

int64_t AgentProcess::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t AgentProcess::SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int32_t AgentProcess::NumaOf(const std::string& pci_bus_id) const {
  // "00000000:3B:00.0" -> /sys/bus/pci/devices/0000:3b:00.0/numa_node, as HAMi reads it.
  std::string id = pci_bus_id;
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
  if (id.rfind("0000", 0) == 0 && id.size() > 12) id = id.substr(4);
  std::ifstream in(options_.sysfs_root + "/bus/pci/devices/" + id + "/numa_node");
  int32_t numa = 0;
  if (!(in >> numa) || numa < 0) return 0;
  return numa;
}

Status AgentProcess::PublishRegistration() {
  std::set<std::string> unhealthy;
  {
    std::lock_guard lock(mu_);
    unhealthy = health_.Unhealthy();
  }
  auto published = publisher_.Publish(unhealthy);
  if (!published.ok()) return published.error();
  const agent::Publication& p = published.value();
  for (const auto& problem : p.problems) spdlog::warn("GPU discovery: {}", problem);
  for (const auto& n : p.notices) {
    if (n.warning) {
      spdlog::warn("registration: {}", n.message);
    } else {
      spdlog::info("registration: {}", n.message);
    }
  }
  mig_.SetMigGpus(p.mig_gpus);
  allocator_.SetMigGpus(std::set<std::string>(p.mig_gpus.begin(), p.mig_gpus.end()));
  {
    std::lock_guard lock(mu_);
    if (p.changed) {
      for (const auto& n : p.registration.notes) spdlog::warn("registration: {}", n);
    }
    registered_ = p.registration.devices;
    registration_ = p.annotation;
  }
  if (p.changed && plugin_) plugin_->DevicesChanged();
  if (metrics_ != nullptr) {
    int reset_pending = 0;
    for (const auto& off : p.registration.mig_mode_off) reset_pending += off.reset_pending ? 1 : 0;
    metrics_->MigModeOffGpus(static_cast<int>(p.registration.mig_mode_off.size()) - reset_pending,
                             reset_pending);
    for (const auto result : p.enable_tries) {
      metrics_->MigModeEnableTried(agent::MigModeEnableResultName(result));
    }
  }
  if (p.usage_patched && metrics_ != nullptr) metrics_->UsageAnnotationPatched();
  if (!p.usage_refused.empty()) spdlog::warn("GPU usage: {}", p.usage_refused);
  if (!p.node_write.ok()) return p.node_write;
  if (p.patched) {
    if (metrics_ != nullptr) metrics_->RegistrationPatched();
    spdlog::info("published {} GPU(s) in {}", p.registration.devices.size(), kRegister);
  }
  return Status::Ok();
}

agent::ReconcileReport AgentProcess::Reconcile() {
  const auto start = std::chrono::steady_clock::now();
  auto view = api_.PodViewOnNode();
  node::NodeClaims claims;
  node::PodViewFreshness freshness;
  if (view.ok()) {
    claims = node::ClaimsOnNode(view->pods, options_.node_name);
    freshness = {true, view->fresh_ms};
  }
  std::vector<std::string> problems;
  for (const auto& p : claims.problems) problems.push_back("MIG claims: " + p);
  // Destroys wait for a pod view newer than the ledger entry by the grace period: the view
  // may lag the newest Allocate by the watch latency, or stand still behind a dead watch (or
  // simply see no pod event after the pod's deletion). Entries that wait only on that are
  // released by a read of their pod from the API server that proves it gone.
  agent::ReconcileOptions reconcile;
  reconcile.grace_ms = options_.reconcile_grace.count();
  reconcile.reclaim_foreign = options_.reclaim_foreign;
  reconcile.prove_gone = [this](const std::vector<node::PodRef>& pods) { return ProveGone(pods); };
  agent::ReconcileReport report = mig_.Reconcile(claims, freshness, reconcile);
  SyncHostFiles(view.ok() ? &view.value() : nullptr, &problems);
  for (const auto& pod : report.proven_gone) {
    spdlog::info(
        "MIG reconcile: pod {} is gone or has ended (read from the API server); its instances "
        "are destroyed without waiting for a fresher pod view",
        pod);
  }
  for (const auto& e : report.errors) problems.push_back("MIG reconcile: " + e);
  for (const auto& c : report.conflicts) problems.push_back("MIG reconcile: " + c);
  {
    // The passes keep their period; a problem they all repeat is logged on its back-off.
    std::lock_guard lock(reported_mu_);
    for (const auto& line : reconcile_problems_.Admit(problems, SteadyMs())) {
      if (line.repeats == 0) {
        spdlog::warn("{}", line.message);
      } else {
        spdlog::warn("{} (repeated by {} passes since)", line.message, line.repeats);
      }
    }
  }
  ReportOnce(report, view.ok() ? &view->pods : nullptr);
  // Pods whose annotation lacks what the driver now reports (e.g. confirmed after a crash
  // between creation and the pod patch) get their identities recorded.
  if (view.ok()) {
    for (const auto& [key, allocations] : report.identities) {
      for (const auto& pod : view->pods) {
        if (pod.Key() != key) continue;
        auto decoded = codec::DecodeMigAllocations(
            *pod.Annotation(std::string(model::annotations::kMigAllocations)));
        if (!decoded.ok()) continue;
        for (auto& a : decoded.value()) {
          for (const auto& u : allocations) {
            if (u.container_index == a.container_index && u.device_index == a.device_index) {
              a.runtime = u.runtime;
            }
          }
        }
        (void)api_.PatchPod(pod,
                            {{std::string(model::annotations::kMigAllocations),
                              codec::EncodeMigAllocations(decoded.value())}},
                            pod.resource_version);
      }
    }
  }
  PublishForeignInstances(report);
  if (metrics_ != nullptr) {
    SyncMigCounters();
    metrics_->InstancesAdopted(report.adopted);
    metrics_->ForeignInstances(static_cast<int>(report.foreign.size()));
    metrics_->InstancesRecreated(static_cast<int>(report.recreated.size()));
    metrics_->LostInstances(static_cast<int>(report.lost.size()));
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    metrics_->Reconciled(secs, static_cast<double>(NowMs()) / 1000.0,
                         static_cast<int>(report.errors.size()));
  }
  if (report.destroyed > 0 || report.adopted > 0) {
    spdlog::info("MIG reconcile: {} kept, {} adopted, {} finished, {} destroyed, {} left alone",
                 report.kept, report.adopted, report.finished, report.destroyed, report.left_alone);
  }
  return report;
}

void AgentProcess::PublishForeignInstances(const agent::ReconcileReport& report) {
  std::set<std::string> mig_gpus;
  {
    std::lock_guard lock(mu_);
    for (const auto& d : registered_) {
      if (d.IsMig()) mig_gpus.insert(d.uuid);
    }
  }
  const agent::ForeignMigSync sync = foreign_mig_.Sync(report, mig_gpus, SteadyMs());
  if (sync.changed) {
    if (foreign_mig_.known().empty()) {
      spdlog::info("MIG reconcile: {}", sync.change);
    } else {
      spdlog::warn("MIG reconcile: {}", sync.change);
    }
  }
  // One line per try: the tries are on a back-off.
  if (sync.error) {
    spdlog::warn("MIG reconcile: {} (failure {}, retrying in {} s)", *sync.error, sync.failures,
                 (sync.retry_in_ms + 999) / 1000);
  } else if (sync.patched) {
    spdlog::info("MIG reconcile: published {} instance(s) tessera did not create in {}",
                 foreign_mig_.known().size(), model::annotations::kForeignMigInstances);
  }
}

agent::GoneProofs AgentProcess::ProveGone(const std::vector<node::PodRef>& pods) {
  agent::GoneProofs proofs;
  std::set<std::string> read;
  for (const auto& p : pods) {
    if (!read.insert(p.uid).second) continue;  // once per pod and pass
    const size_t slash = p.pod.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == p.pod.size()) {
      proofs.errors.push_back("cannot prove pod \"" + p.pod + "\" gone: not namespace/name");
      continue;
    }
    auto got = api_.ReadPod(p.pod.substr(0, slash), p.pod.substr(slash + 1));
    if (!got.ok()) {
      proofs.errors.push_back("cannot prove pod " + p.pod + " gone: " + got.error().message);
      continue;
    }
    if (node::ReadProvesGone(got.value(), p.uid)) proofs.gone_uids.insert(p.uid);
  }
  return proofs;
}

void AgentProcess::ReportOnce(const agent::ReconcileReport& report,
                              const std::vector<model::Pod>* pods) {
  std::lock_guard lock(reported_mu_);
  // A foreign instance at a pod's placement: logged and recorded on the pod once, for as long
  // as it stays there.
  std::set<std::string> blocking;
  for (const auto& f : report.foreign_at_claims) {
    const std::string key = f.pod_uid + " " + node::DescribeInstance(f.instance);
    blocking.insert(key);
    if (foreign_reported_.count(key) > 0) continue;
    spdlog::warn("MIG reconcile: {}", f.message);
    if (pods != nullptr) {
      for (const auto& pod : *pods) {
        if (pod.uid == f.pod_uid) api_.PodEvent(pod, "ForeignMigInstance", f.message, true);
      }
    }
  }
  foreign_reported_ = std::move(blocking);
  // A live pod's instance gone after a reboot, GPU reset or driver reload: a recreation is
  // recorded on the pod each time, one that fails once for as long as it keeps failing.
  for (const auto& r : report.recreated) {
    spdlog::warn("MIG reconcile: {}", r.message);
    if (pods == nullptr) continue;
    for (const auto& pod : *pods) {
      if (pod.uid == r.pod_uid) api_.PodEvent(pod, "MigInstanceRecreated", r.message, true);
    }
  }
  std::set<std::string> lost;
  for (const auto& l : report.lost) {
    const std::string key = l.pod_uid + " " + l.entry.gpu_uuid + " " + l.entry.profile + " " +
                            std::to_string(l.entry.placement.start);
    lost.insert(key);
    if (lost_reported_.count(key) > 0) continue;
    spdlog::warn("MIG reconcile: {}", l.message);
    if (pods == nullptr) continue;
    for (const auto& pod : *pods) {
      if (pod.uid == l.pod_uid) api_.PodEvent(pod, "MigInstanceLost", l.message, true);
    }
  }
  lost_reported_ = std::move(lost);
  FailUnrecoverablePods(report, pods);
  std::set<std::string> waiting(report.awaiting_fresher_view.begin(),
                                report.awaiting_fresher_view.end());
  for (const auto& w : waiting) {
    if (waiting_reported_.count(w) == 0) spdlog::info("MIG reconcile: {}", w);
  }
  waiting_reported_ = std::move(waiting);
}

void AgentProcess::FailUnrecoverablePods(const agent::ReconcileReport& report,
                                         const std::vector<model::Pod>* pods) {
  const auto failures = unrecoverable_.Judge(report, NowMs());
  if (pods == nullptr) return;  // nothing to fail without the pods themselves (and their uids)
  for (const auto& f : failures) {
    for (const auto& pod : *pods) {
      if (pod.uid != f.pod_uid || pod.IsTerminal()) continue;
      auto failed = api_.FailPod(pod, f.reason, f.message);
      if (!failed.ok()) {  // retried next pass, while the report still names the pod
        spdlog::warn("MIG reconcile: failing pod {}: {}", f.pod, failed.error().message);
        continue;
      }
      spdlog::warn("MIG reconcile: pod {} failed: {}", f.pod, f.message);
      api_.PodEvent(pod, f.reason, f.message, true);
      if (metrics_ != nullptr) metrics_->PodFailed(f.reason);
    }
  }
}

void AgentProcess::PauseHealth(int ms) const {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!stopping_ && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void AgentProcess::WatchXidOfRegisteredGpus() {
  std::vector<std::string> gpus;
  {
    std::lock_guard lock(mu_);
    for (const auto& d : registered_) gpus.push_back(d.uuid);
  }
  const int64_t now = SteadyMs();
  std::vector<std::string> failed;
  int64_t longest_wait_ms = 0;
  for (const std::string& gpu : xid_watches_.Due(gpus, now)) {
    auto watched = driver_.WatchXid(gpu);
    if (watched.ok()) {
      if (xid_watches_.failures(gpu) > 0) {
        spdlog::info("GPU health: XID events of GPU {} are received now, after {} failed tries",
                     gpu, xid_watches_.failures(gpu));
      }
      xid_watches_.Watched(gpu);
      continue;
    }
    // The GPU keeps its health: a failed registration says nothing about the GPU itself.
    longest_wait_ms = std::max(longest_wait_ms, xid_watches_.Failed(gpu, now));
    failed.push_back(gpu + " (try " + std::to_string(xid_watches_.failures(gpu)) +
                     "): " + watched.error().message);
  }
  if (!failed.empty()) {
    spdlog::warn(
        "GPU health: cannot receive the XID events of {}; retrying in {} s at the "
        "latest, the other GPUs' XIDs are handled meanwhile",
        Join(failed, "; "), (longest_wait_ms + 999) / 1000);
  }
  if (metrics_ != nullptr) {
    metrics_->XidUnwatchedGpus(static_cast<int>(xid_watches_.Unwatched(gpus).size()));
  }
}

bool AgentProcess::PollHealth(int timeout_ms) {
  bool changed = false;
  if (!xid_policy_.enabled()) {
    PauseHealth(timeout_ms);  // only recoveries to apply
  } else {
    WatchXidOfRegisteredGpus();
    if (!xid_watches_.any_watched() || !xid_wait_backoff_.Due(SteadyMs())) {
      // Nothing to wait on yet, or the last wait failed: sleep, never spin.
      PauseHealth(timeout_ms);
    } else {
      auto events = driver_.WaitXid(timeout_ms);
      if (!events.ok()) {
        const int64_t delay = xid_wait_backoff_.Failed(SteadyMs());
        spdlog::warn("GPU health: waiting for XID events: {} (failure {}, retrying in {} s)",
                     events.error().message, xid_wait_backoff_.failures(), delay / 1000);
      } else {
        if (xid_wait_backoff_.failures() > 0) {
          spdlog::info("GPU health: XID events are received again, after {} failed waits",
                       xid_wait_backoff_.failures());
          xid_wait_backoff_.Succeeded();
        }
        for (const auto& e : events.value()) {
          const node::XidEffect effect = xid_policy_.Effect(e.xid);
          if (effect == node::XidEffect::kIgnored) continue;
          const bool needs_reset = effect == node::XidEffect::kNeedsReset;
          std::lock_guard lock(mu_);
          if (health_.MarkUnhealthy(e.gpu_uuid, NowMs(), needs_reset)) {
            spdlog::warn(
                "GPU {} is unhealthy after XID {}{}", e.gpu_uuid, e.xid,
                needs_reset ? " (it needs a GPU reset: unhealthy until the agent restarts)" : "");
            changed = true;
          }
        }
      }
    }
  }
  {
    std::lock_guard lock(mu_);
    for (const auto& gpu : health_.Recover(NowMs())) {
      spdlog::info("GPU {} is healthy again", gpu);
      changed = true;
    }
    if (metrics_ != nullptr) metrics_->UnhealthyGpus(static_cast<int>(health_.Unhealthy().size()));
    if (changed) health_changed_ = true;
  }
  return changed;
}

void AgentProcess::CheckLedger() {
  bool has_mig_gpus = false;
  {
    std::lock_guard lock(mu_);
    has_mig_gpus = std::any_of(registered_.begin(), registered_.end(),
                               [](const model::GpuDevice& d) { return d.IsMig(); });
  }
  // Only MIG Allocates write the ledger: a node without MIG GPUs does not depend on it.
  const Status usable =
      has_mig_gpus ? agent::LedgerFile(options_.ledger_path).CheckUsable() : Status::Ok();
  const bool blocked = !usable.ok();
  if (mig_blocked_.exchange(blocked) == blocked) return;
  if (blocked) {
    spdlog::error(
        "MIG ledger {}: {}; no MIG instance can be made, not ready until it can be "
        "written",
        options_.ledger_path, usable.message());
  } else if (has_mig_gpus) {
    spdlog::info("MIG ledger {} can be written again", options_.ledger_path);
  }
}

void AgentProcess::KeepKubeletRegistration(int64_t now_ms) {
  if (!plugin_ || !kubelet_backoff_.Due(now_ms)) return;
  const bool was_registered = plugin_->registered() || plugin_->registrations() > 0;
  auto restarted = plugin_->CheckKubelet();
  if (!restarted.ok()) {
    const int64_t delay = kubelet_backoff_.Failed(now_ms);
    spdlog::warn("{} (failure {}, retrying in {} s)", restarted.error().message,
                 kubelet_backoff_.failures(), delay / 1000);
    return;
  }
  if (!restarted.value()) return;
  kubelet_backoff_.Succeeded();
  if (was_registered) {
    spdlog::info("the kubelet restarted: registered {} again", options_.plugin.resource_name);
  } else {
    spdlog::info("device plugin {} registered with the kubelet", options_.plugin.resource_name);
  }
}

Status AgentProcess::Start(const std::function<bool()>& pods_synced) {
  if (auto s = mig_.Start(); !s) return s;
  if (auto s = PublishRegistration(); !s) return s;
  CheckLedger();
  // Adopt live instances before the first Allocate can arrive.
  for (int i = 0; i < 600 && !pods_synced(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!pods_synced()) return Error{"the pod informer did not sync within 60 s"};
  Reconcile();
  if (options_.serve_kubelet) {
    plugin_ = std::make_unique<deviceplugin::DevicePluginServer>(*this, options_.plugin);
    if (auto s = plugin_->Start(); !s) {
      // No kubelet yet, or one that is starting: Run() keeps trying, with back-off.
      const int64_t delay = kubelet_backoff_.Failed(SteadyMs());
      spdlog::warn("{} (retrying in {} s)", s.message(), delay / 1000);
    } else {
      spdlog::info("device plugin {} registered with the kubelet", options_.plugin.resource_name);
    }
  }
  health_thread_ = std::thread([this] {
    while (!stopping_) {
      if (PollHealth(1000) && plugin_) plugin_->DevicesChanged();
    }
  });
  ready_ = true;
  return Status::Ok();
}

void AgentProcess::ReadUsage() {
  auto reading = driver_.ReadUsage();
  if (!reading.ok()) {
    if (metrics_ != nullptr) metrics_->UsageReadFailed(1);
    if (reading.error().code == ErrorCode::kUnsupported) {
      if (!usage_unsupported_logged_) spdlog::info("GPU usage: {}", reading.error().message);
      usage_unsupported_logged_ = true;
    } else {
      spdlog::warn("GPU usage: {}", reading.error().message);
    }
    return;
  }
  const node::UsageReading& r = reading.value();
  const int64_t now_s = NowMs() / 1000;
  if (metrics_ != nullptr) {
    metrics_->GpuUsage(options_.node_name, r, static_cast<double>(now_s));
    if (!r.problems.empty()) metrics_->UsageReadFailed(static_cast<int>(r.problems.size()));
  }
  // One line per change of the problem, not one per read.
  const std::string problem = r.problems.empty() ? "" : r.problems.front().message;
  if (problem != usage_problem_logged_ && !problem.empty()) {
    spdlog::warn("GPU usage: {} ({} problem(s) in this read)", problem, r.problems.size());
  }
  usage_problem_logged_ = problem;
  publisher_.SetUsage(agent::UsageAnnotation(r, now_s));
}

void AgentProcess::Run(const std::function<bool()>& stop) {
  auto next_usage = std::chrono::steady_clock::now();
  auto next_register = std::chrono::steady_clock::now() + options_.register_interval;
  auto next_reconcile = std::chrono::steady_clock::now() + options_.reconcile_interval;
  auto next_ledger_check = std::chrono::steady_clock::now();
  while (!stop()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto now = std::chrono::steady_clock::now();
    const int64_t now_ms = SteadyMs();
    bool health_changed = false;
    {
      std::lock_guard lock(mu_);
      std::swap(health_changed, health_changed_);
    }
    // Before the registration pass, so a due pass publishes the latest read. Never on the
    // kubelet's gRPC threads: Allocate waits for no usage read.
    if (options_.usage_interval.count() > 0 && now >= next_usage) {
      ReadUsage();
      next_usage = now + options_.usage_interval;
    }
    // A health change is published at once; a failed publication is retried after 1 s, 2 s,
    // ... up to the register interval, one log line each.
    if (health_changed || now >= next_register) {
      if (auto s = PublishRegistration(); !s) {
        const int64_t delay = publish_backoff_.Failed(now_ms);
        spdlog::warn("registration: {} (failure {}, retrying in {} s)", s.message(),
                     publish_backoff_.failures(), delay / 1000);
        next_register = now + std::chrono::milliseconds(delay);
      } else {
        if (publish_backoff_.failures() > 0) {
          spdlog::info("registration: published again, after {} failures",
                       publish_backoff_.failures());
        }
        publish_backoff_.Succeeded();
        next_register = now + options_.register_interval;
      }
    }
    if (reconcile_now_.exchange(false) || now >= next_reconcile) {
      Reconcile();
      next_reconcile = now + options_.reconcile_interval;
    }
    if (now >= next_ledger_check) {
      CheckLedger();
      next_ledger_check = now + std::chrono::milliseconds(kLedgerCheckMs);
    }
    KeepKubeletRegistration(now_ms);
  }
  stopping_ = true;
}

std::vector<node::PluginDevice> AgentProcess::Devices() {
  std::lock_guard lock(mu_);
  return agent::AdvertisedDevices(registered_, health_.Unhealthy(),
                                  options_.device.device_split_count,
                                  options_.device.enable_numa_topology);
}

Result<std::vector<node::ContainerResponse>> AgentProcess::Allocate(
    const std::vector<std::vector<std::string>>& container_requests) {
  auto result = allocator_.Allocate(container_requests);
  std::vector<std::string> unused;  // the spec logs its own problems; no folder sweep here
  SyncHostFiles(nullptr, &unused);
  if (metrics_ != nullptr) {
    metrics_->Allocation(result.ok());
    SyncMigCounters();
  }
  if (!result.ok()) {
    spdlog::warn("Allocate: {}", result.error().message);
  } else {
    TriggerReconcile();
  }
  return result;
}

std::vector<std::vector<std::string>> AgentProcess::Preferred(
    const std::vector<node::PreferredRequest>& requests) {
  return allocator_.Preferred(requests);
}

void AgentProcess::SyncHostFiles(const agent::PodView* view, std::vector<std::string>* problems) {
  if (cdi_spec_) (void)cdi_spec_->Sync();  // it logs and counts its failures itself
  if (!hami_core_folders_ || view == nullptr) return;
  // Only a complete view (the informer synced, or a list) proves a pod gone.
  auto sweep =
      agent::SweepHamiCoreFolders(*hami_core_folders_, *view, options_.reconcile_grace.count());
  for (const auto& name : sweep.removed) {
    spdlog::info("HAMi-core folder {}/{} removed: its pod is gone",
                 hami_core_folders_->containers_dir(), name);
  }
  problems->insert(problems->end(), sweep.errors.begin(), sweep.errors.end());
}

void AgentProcess::SyncMigCounters() {
  std::lock_guard lock(counters_mu_);
  const uint64_t created = mig_.instances_created();
  const uint64_t destroyed = mig_.instances_destroyed();
  metrics_->InstancesCreated(static_cast<double>(created - created_seen_));
  metrics_->InstancesDestroyed(static_cast<double>(destroyed - destroyed_seen_));
  created_seen_ = created;
  destroyed_seen_ = destroyed;
}

std::string AgentProcess::last_registration() const {
  std::lock_guard lock(mu_);
  return registration_;
}

}  // namespace tessera::agent_runtime
