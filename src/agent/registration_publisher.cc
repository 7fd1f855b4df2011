#include "agent/registration_publisher.h"

#include "core/codec/node_register.h"
#include "core/model/annotations.h"

namespace tessera::agent {

namespace {

const std::string kRegister(model::annotations::kNodeRegister);
const std::string kUsage(model::annotations::kGpuUsage);

std::string DescribeGpu(const node::MigModeOff& off) {
  return "GPU " + off.gpu_uuid + " (index " + std::to_string(off.index) + ")";
}

// What the fallback made of the GPU, for the Events.
std::string Fate(const node::MigModeOff& off) {
  return off.shared ? "it is shared with HAMi-core instead (migFallback: hami-core)"
                    : "it is not registered, so no pod is placed on it (migFallback: none)";
}

std::string TryKey(const Error& e) {
  return "failed " + e.origin + " " + std::to_string(e.origin_code);
}

}  // namespace

codec::NodeGpuUsage UsageAnnotation(const node::UsageReading& reading, int64_t unix_seconds) {
  codec::NodeGpuUsage out;
  out.time_s = unix_seconds;
  for (const auto& g : reading.gpus) {
    if (out.gpus.size() == codec::kMaxUsageGpus) break;
    codec::GpuUsage u;
    u.uuid = g.uuid;
    u.usage = {g.usage.utilization_percent, g.usage.memory_used_mib};
    for (const auto& m : g.mig) {
      if (u.mig.size() == codec::kMaxUsageMigInstances) break;
      u.mig.push_back({m.placement.start, {m.usage.utilization_percent, m.usage.memory_used_mib}});
    }
    out.gpus.push_back(std::move(u));
  }
  return out;
}

const char* MigModeEnableResultName(MigModeEnableResult result) {
  switch (result) {
    case MigModeEnableResult::kEnabled:
      return "enabled";
    case MigModeEnableResult::kResetPending:
      return "reset-pending";
    case MigModeEnableResult::kBusy:
      return "busy";
    case MigModeEnableResult::kFailed:
      return "failed";
  }
  return "failed";
}

RegistrationPublisher::RegistrationPublisher(node::GpuDriver& driver, NodeApi& api,
                                             node::NodeDeviceConfig config,
                                             PublisherOptions options, NumaLookup numa,
                                             std::function<int64_t()> steady_ms)
    : driver_(driver),
      api_(api),
      config_(std::move(config)),
      options_(options),
      numa_(std::move(numa)),
      steady_ms_(std::move(steady_ms)) {}

void RegistrationPublisher::Notice(Publication* out, const std::string& reason,
                                   const std::string& message, bool warning) {
  api_.NodeEvent(reason, message, warning);
  out->notices.push_back({reason, message, warning});
}

Result<Publication> RegistrationPublisher::Publish(const std::set<std::string>& unhealthy) {
  Publication out;
  node::RegistrationInput input;
  input.unhealthy = unhealthy;
  const auto discover = [&]() -> Status {
    auto found = driver_.Discover();
    if (!found.ok())
      return Error{"GPU discovery: " + found.error().message, ErrorCode::kUnavailable};
    input.gpus = std::move(found.value().gpus);
    input.numa.clear();
    for (const auto& g : input.gpus) input.numa[g.uuid] = numa_ ? numa_(g.pci_bus_id) : 0;
    out.problems.clear();
    for (const auto& p : found.value().problems) out.problems.push_back(p.message);
    return Status::Ok();
  };
  if (auto s = discover(); !s) return Error{s.message(), s.code()};
  node::Registration reg = node::BuildRegistration(input, config_);
  if (options_.set_mig_mode && EnableMigMode(reg, &out)) {
    // A mode changed: discover again, so a GPU now in MIG mode is registered with its profiles.
    if (auto s = discover(); !s) return Error{s.message(), s.code()};
    reg = node::BuildRegistration(input, config_);
  }
  ReportMigModeOff(reg, &out);
  out.annotation = codec::EncodeNodeRegister(reg.devices);
  for (const auto& d : reg.devices) {
    if (d.IsMig()) out.mig_gpus.push_back(d.uuid);
  }
  out.changed = out.annotation != last_annotation_;
  last_annotation_ = out.annotation;
  out.registration = std::move(reg);
  // Compare with what the node carries, not with what was written last: a deleted or edited
  // annotation is restored (HAMi's cache would not, hami-node.md W11).
  auto node = api_.GetNode();
  if (!node.ok()) {
    out.node_write = Error{node.error().message, ErrorCode::kUnavailable};
    return out;
  }
  const std::string* current = node->Annotation(kRegister);
  const bool registration_current = current != nullptr && *current == out.annotation;
  AnnotationPatch patch;
  if (!registration_current) patch[kRegister] = out.annotation;
  if (usage_ && !usage_refused_) {
    // With the registration's write, always (no extra write); alone, only when the node's copy
    // says something else and the refresh allows another write.
    bool due = !registration_current;
    if (!due && options_.usage_refresh_ms > 0) {
      const std::string* on_node = node->Annotation(kUsage);
      auto decoded = on_node == nullptr ? Result<codec::NodeGpuUsage>(Error{"absent"})
                                        : codec::DecodeGpuUsage(*on_node);
      const bool differs = !decoded.ok() || !codec::SameMeasurements(decoded.value(), *usage_);
      due = differs && (!last_usage_write_ms_ ||
                        steady_ms_() - *last_usage_write_ms_ >= options_.usage_refresh_ms);
    }
    if (due) patch[kUsage] = codec::EncodeGpuUsage(*usage_);
  }
  if (patch.empty()) return out;
  auto patched = api_.PatchNode(patch, "");
  if (!patched.ok() && patch.count(kUsage) > 0 &&
      (patched.error().code == ErrorCode::kPermissionDenied ||
       patched.error().code == ErrorCode::kInvalidInput)) {
    // Refused, not failed: most likely an admission policy older than the agent that does not
    // allow the key. The usage is dropped for good (it is only for /ui), so that it never keeps
    // the registration from being written.
    usage_refused_ = true;
    usage_.reset();
    out.usage_refused = "writing " + kUsage + " was refused (" + patched.error().message +
                        "); GPU usage is no longer published by this agent (update the "
                        "agent's admission policy, docs/security.md)";
    patch.erase(kUsage);
    if (patch.empty()) return out;
    patched = api_.PatchNode(patch, "");
  }
  if (!patched.ok()) {
    out.node_write = Error{"publishing " + (registration_current ? kUsage : kRegister) + ": " +
                               patched.error().message,
                           ErrorCode::kUnavailable};
    return out;
  }
  out.patched = !registration_current;
  out.usage_patched = patch.count(kUsage) > 0;
  if (out.usage_patched) last_usage_write_ms_ = steady_ms_();
  return out;
}

bool RegistrationPublisher::EnableMigMode(const node::Registration& planned, Publication* out) {
  bool changed = false;
  const int64_t now = steady_ms_();
  for (const auto& off : planned.mig_mode_off) {
    if (off.reset_pending) continue;  // asked already: only a GPU reset or reboot applies it
    auto& backoff = enable_backoff_
                        .try_emplace(off.gpu_uuid, node::RetryBackoff::kDefaultInitialMs,
                                     options_.set_mig_mode_retry_max_ms)
                        .first->second;
    if (!backoff.Due(now)) continue;
    const std::string gpu = DescribeGpu(off);
    MigModeEnableResult result = MigModeEnableResult::kFailed;
    std::string key;
    std::string why;
    // Never on a GPU that computes: the driver may reset it to apply the mode.
    auto processes = driver_.ComputeProcessCount(off.gpu_uuid);
    if (!processes.ok()) {
      key = TryKey(processes.error());
      why = "cannot tell whether " + gpu + " is idle: " + processes.error().message;
    } else if (processes.value() > 0) {
      result = MigModeEnableResult::kBusy;
      key = "busy";
      why = gpu + " is used by " + std::to_string(processes.value()) +
            " compute process(es); MIG mode is enabled once none does";
    } else if (auto set = driver_.SetMigMode(off.gpu_uuid, true); !set.ok()) {
      key = TryKey(set.error());
      why = "cannot enable MIG mode on " + gpu + ": " + set.error().message;
      if (set.error().code == ErrorCode::kPermissionDenied) {
        why += " (the agent needs root and the GPU's device files: a privileged container)";
      }
    } else if (set.value().current_enabled) {
      result = MigModeEnableResult::kEnabled;
    } else if (set.value().pending_enabled) {
      result = MigModeEnableResult::kResetPending;
      activation_[off.gpu_uuid] = set.value().activation;
    } else {
      key = "unchanged";
      why = "asked to enable MIG mode on " + gpu + ", the driver left it off" +
            (set.value().activation.empty() ? "" : " (" + set.value().activation + ")");
    }
    out->enable_tries.push_back(result);
    if (result == MigModeEnableResult::kEnabled || result == MigModeEnableResult::kResetPending) {
      changed = true;
      backoff.Succeeded();
      reported_try_.erase(off.gpu_uuid);
      // A pending mode is reported with the GPU's state (MigModeResetPending) after discovery.
      if (result == MigModeEnableResult::kEnabled) {
        Notice(out, "MigModeEnabled", "--set-mig-mode enabled MIG mode on " + gpu, false);
      }
      continue;
    }
    const int64_t delay_ms = backoff.Failed(now);
    auto& reported = reported_try_[off.gpu_uuid];
    if (reported == key) continue;  // once per change, not every try
    reported = key;
    Notice(out, "MigModeEnableFailed",
           "--set-mig-mode: " + why + "; tried again with back-off (next in " +
               std::to_string((delay_ms + 999) / 1000) + " s)",
           true);
  }
  return changed;
}

void RegistrationPublisher::ReportMigModeOff(const node::Registration& reg, Publication* out) {
  std::map<std::string, std::string> states;
  for (const auto& off : reg.mig_mode_off) {
    const std::string state = off.reset_pending ? "reset-pending" : "off";
    states[off.gpu_uuid] = state;
    auto last = reported_state_.find(off.gpu_uuid);
    if (last != reported_state_.end() && last->second == state) continue;
    const std::string gpu = DescribeGpu(off);
    const std::string index = std::to_string(off.index);
    if (off.reset_pending) {
      auto said = activation_.find(off.gpu_uuid);
      const std::string activation = said == activation_.end() ? "" : said->second;
      Notice(out, "MigModeResetPending",
             gpu + " is configured for MIG (operating mode mig); its MIG mode is enabled but " +
                 "waits for a GPU reset or reboot" +
                 (activation.empty() ? "" : " (the driver said: " + activation + ")") +
                 "; until then " + Fate(off) + ". Reset it when idle (nvidia-smi -r -i " + index +
                 ") or reboot the node",
             true);
    } else {
      Notice(out, "MigModeOff",
             gpu + " is configured for MIG (operating mode mig) but its MIG mode is off; " +
                 Fate(off) + ". " +
                 (options_.set_mig_mode
                      ? std::string("--set-mig-mode enables it when no process uses the GPU")
                      : "Enable it (nvidia-smi -i " + index +
                            " -mig 1) or run the agent with --set-mig-mode"),
             true);
    }
  }
  // A GPU in MIG mode again (or gone) is forgotten: a later change is reported anew.
  for (auto* by_gpu : {&reported_try_, &activation_}) {
    std::erase_if(*by_gpu, [&](const auto& e) { return states.count(e.first) == 0; });
  }
  std::erase_if(enable_backoff_, [&](const auto& e) { return states.count(e.first) == 0; });
  reported_state_ = std::move(states);
}

}  // namespace tessera::agent
