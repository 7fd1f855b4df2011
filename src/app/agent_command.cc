#include "app/agent_command.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>

#include "adapters/kube/client.h"
#include "adapters/kube/config.h"
#include "adapters/kube/delegated_auth.h"
#include "adapters/nvml/nvml_gpu_driver.h"
#include "adapters/yaml/yaml_json.h"
#include "agent/ledger_file.h"
#include "agent_runtime/agent_http.h"
#include "agent_runtime/agent_process.h"
#include "agent_runtime/kube_node_api.h"
#include "app/agent_flags.h"
#include "app/command_support.h"
#include "core/codec/node_register.h"
#include "core/common/strings.h"
#include "core/node/node_config.h"

namespace tessera::app {

namespace {

int Fail(const std::string& message) {
  spdlog::error("{}", message);
  return 1;
}

namespace fs = std::filesystem;

Status FlagError(const std::string& flag, const std::string& value, const std::string& why) {
  return Error{flag + " " + value + ": " + why};
}

// A file the agent reads: it exists, is a file and can be read. `missing_ok`: a missing file
// is fine (HAMi's config.json).
Status CheckReadableFile(const std::string& flag, const std::string& path, bool missing_ok) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) {
    if (missing_ok && (!ec || ec == std::errc::no_such_file_or_directory)) return Status::Ok();
    return FlagError(flag, path,
                     ec && ec != std::errc::no_such_file_or_directory
                         ? "cannot be read: " + ec.message()
                         : "does not exist");
  }
  if (fs::is_directory(status)) return FlagError(flag, path, "is a folder, not a file");
  if (::access(path.c_str(), R_OK) != 0) {
    return FlagError(flag, path, std::string("cannot be read: ") + std::strerror(errno));
  }
  return Status::Ok();
}

// A folder the agent works in: an absolute path to an existing folder; `writable`: where the
// agent makes files (its device-plugin socket).
Status CheckFolder(const std::string& flag, const std::string& path, bool writable) {
  if (!fs::path(path).is_absolute()) return FlagError(flag, path, "not an absolute path");
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) return FlagError(flag, path, "does not exist");
  if (!fs::is_directory(status)) return FlagError(flag, path, "not a folder");
  if (writable && ::access(path.c_str(), W_OK | X_OK) != 0) {
    return FlagError(flag, path, std::string("not writable: ") + std::strerror(errno));
  }
  return Status::Ok();
}

// Every path flag, checked before anything starts: a clear error naming the flag instead of an
// uncaught exception, or an agent that reports ready while every MIG Allocate would fail.
Status CheckAgentPaths(const AgentCommandOptions& o, const std::string& hook_path) {
  if (!o.device_config.empty()) {
    if (auto s = CheckReadableFile("--device-config-file", o.device_config, false); !s) return s;
  }
  if (!o.node_config.empty()) {
    if (auto s = CheckReadableFile("--node-config-file", o.node_config, true); !s) return s;
  }
  if (o.discover_only) return Status::Ok();  // reads NVML and the configuration only
  if (!o.kubeconfig.empty()) {
    if (auto s = CheckReadableFile("--kubeconfig", o.kubeconfig, false); !s) return s;
  }
  const fs::path ledger(o.ledger);
  if (!ledger.is_absolute()) return FlagError("--ledger", o.ledger, "not an absolute path");
  std::error_code ec;
  if (ledger.has_parent_path() && !fs::exists(ledger.parent_path(), ec)) {
    // As the DaemonSet's DirectoryOrCreate volume would; a folder that cannot be made is an error.
    if (fs::create_directories(ledger.parent_path(), ec); ec) {
      return FlagError(
          "--ledger", o.ledger,
          "cannot create its folder " + ledger.parent_path().string() + ": " + ec.message());
    }
  }
  if (auto s = agent::LedgerFile(o.ledger).CheckUsable(); !s) {
    return FlagError("--ledger", o.ledger, s.message());
  }
  if (!o.kubelet_socket.empty()) {
    if (!fs::path(o.plugin_dir).is_absolute()) {
      return FlagError("--plugin-dir", o.plugin_dir, "not an absolute path");
    }
    // The kubelet makes its folder when it starts: a missing one is waited for (the agent
    // keeps trying to register), anything else that is not a writable folder is an error.
    if (fs::exists(o.plugin_dir, ec)) {
      if (auto s = CheckFolder("--plugin-dir", o.plugin_dir, true); !s) return s;
    } else {
      spdlog::warn("--plugin-dir {}: does not exist yet; waiting for the kubelet to make it",
                   o.plugin_dir);
    }
  }
  // The host path of HAMi-core's files, mounted into shared-GPU containers: it need not exist
  // on a node that runs only MIG pods, but a relative one can never be mounted.
  if (!fs::path(hook_path).is_absolute()) {
    return FlagError("--hook-path", hook_path, "not an absolute path");
  }
  if (auto s = CheckFolder("--sysfs-root", o.sysfs_root, false); !s) return s;
  // Made when missing (as the runtime's CDI folder usually is, at its first spec).
  if (!fs::path(o.cdi_spec_dir).is_absolute()) {
    return FlagError("--cdi-spec-dir", o.cdi_spec_dir, "not an absolute path");
  }
  return Status::Ok();
}

Result<node::NodeDeviceConfig> LoadConfig(const AgentCommandOptions& o, const std::string& node) {
  auto device_config = LoadDeviceConfig(o.device_config);
  if (!device_config.ok()) return device_config.error();
  node::NodeDeviceConfig base = node::FromDeviceConfig(device_config->nvidia);
  std::error_code ec;
  if (o.node_config.empty() || !fs::exists(o.node_config, ec)) return base;
  auto text = adapters::ReadFile(o.node_config);
  if (!text.ok()) return text.error();
  auto json = codec::ParseJson(text.value(), "node config " + o.node_config);
  if (!json.ok()) return json.error();
  auto applied = node::ApplyNodeConfig(std::move(base), &json.value(), node);
  if (!applied.ok()) return Error{o.node_config + ": " + applied.error().message};
  return applied;
}

int DiscoverOnly(node::GpuDriver& driver, const node::NodeDeviceConfig& config) {
  auto found = driver.Discover();
  if (!found.ok()) return Fail("GPU discovery: " + found.error().message);
  node::RegistrationInput input;
  input.gpus = found.value().gpus;
  node::Registration reg = node::BuildRegistration(input, config);
  const std::string text = codec::EncodeNodeRegister(reg.devices);
  nlohmann::ordered_json out;
  out["gpus"] = nlohmann::ordered_json::array();
  for (const auto& g : found.value().gpus) {
    nlohmann::ordered_json gj{{"index", g.index},
                              {"uuid", g.uuid},
                              {"name", g.name},
                              {"memoryMiB", g.memory_mib},
                              {"pciBusId", g.pci_bus_id},
                              {"migCapable", g.mig_capable},
                              {"migEnabled", g.mig_enabled},
                              {"migPendingEnabled", g.mig_pending_enabled},
                              {"migProfiles", nlohmann::ordered_json::array()}};
    for (const auto& p : g.mig_profiles) {
      nlohmann::ordered_json pl = nlohmann::ordered_json::array();
      for (const auto& x : p.placements) pl.push_back({{"start", x.start}, {"size", x.size}});
      gj["migProfiles"].push_back({{"name", p.name},
                                   {"nvmlEnum", p.nvml_enum},
                                   {"nvmlId", p.nvml_id},
                                   {"sliceCount", p.slice_count},
                                   {"instanceCount", p.instance_count},
                                   {"smCount", p.sm_count},
                                   {"memoryMiB", p.memory_mib},
                                   {"placements", pl}});
    }
    out["gpus"].push_back(gj);
  }
  out["problems"] = nlohmann::ordered_json::array();
  for (const auto& p : found.value().problems) out["problems"].push_back(p.message);
  out["notes"] = reg.notes;
  out["hami.io/node-nvidia-register"] = text;
  std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace

int RunAgentCommand(const AgentCommandOptions& o) {
  if (o.log_level == "debug") spdlog::set_level(spdlog::level::debug);
  if (o.log_level == "warn") spdlog::set_level(spdlog::level::warn);
  std::string node_name = o.node_name;
  if (node_name.empty()) {
    const char* env = std::getenv("NODE_NAME");
    node_name = env != nullptr ? env : "";
  }
  if (node_name.empty() && !o.discover_only) return Fail("--node-name (or NODE_NAME) is required");
  const std::string hook = ResolveHookPath(o.hook_path, std::getenv("HOOK_PATH"));
  if (o.read_auth != "auto" && o.read_auth != "delegated" && o.read_auth != "none") {
    return Fail("--read-auth: want auto, delegated or none, got " + o.read_auth);
  }
  if (auto s = CheckAgentPaths(o, hook); !s) return Fail(s.message());
  auto config = LoadConfig(o, node_name);
  if (!config.ok()) return Fail(config.error().message);

  auto catalog = mig::GpuModelCatalog::Builtin();
  if (!catalog.ok()) return Fail("built-in MIG table: " + catalog.error().message);
  auto library = nvml::NvmlLibrary::Open(o.nvml_library);
  if (!library.ok()) return Fail(library.error().message);
  auto driver = nvml::NvmlGpuDriver::Create(std::move(library.value()), &catalog.value());
  if (!driver.ok()) return Fail(driver.error().message);
  if (o.discover_only) return DiscoverOnly(*driver.value(), config.value());

  agent_runtime::AgentOptions ao;
  ao.node_name = node_name;
  ao.device = config.value();
  ao.ledger_path = o.ledger;
  ao.sysfs_root = o.sysfs_root;
  ao.manage_hami_core_folders = true;
  ao.cdi_spec_dir = o.cdi_spec_dir;
  ao.driver_proc_root = o.driver_proc_root;
  ao.reclaim_foreign = o.reclaim_foreign;
  ao.set_mig_mode = o.set_mig_mode;
  for (auto [flag, text, out] :
       {std::tuple{"--register-interval", o.register_interval, &ao.register_interval},
        std::tuple{"--reconcile-interval", o.reconcile_interval, &ao.reconcile_interval},
        std::tuple{"--reconcile-grace", o.reconcile_grace, &ao.reconcile_grace},
        std::tuple{"--fail-lost-after", o.fail_lost_after, &ao.fail_lost_after},
        std::tuple{"--usage-interval", o.usage_interval, &ao.usage_interval},
        std::tuple{"--usage-annotation-refresh", o.usage_annotation_refresh,
                   &ao.usage_annotation_refresh}}) {
    auto ms = DurationFlag(flag, text);
    if (!ms.ok()) return Fail(ms.error().message);
    *out = ms.value();
  }
  auto recovery = DurationFlag("--health-recovery", o.health_recovery);
  if (!recovery.ok()) return Fail(recovery.error().message);
  ao.health_recovery_ms = recovery.value().count();
  if (const char* d = std::getenv("DP_DISABLE_HEALTHCHECKS")) ao.xid_disable = d;
  if (const char* e = std::getenv("DP_ENABLE_HEALTHCHECKS")) ao.xid_enable = e;
  ao.plugin.plugin_dir = o.plugin_dir;
  ao.plugin.kubelet_socket = o.kubelet_socket;
  ao.plugin.resource_name = ao.device.resource_count_name;
  ao.plugin.preferred_allocation = ao.device.preferred_allocation;
  ao.serve_kubelet = !o.kubelet_socket.empty();
  ao.allocator.node_name = node_name;
  ao.allocator.hami_core.hook_path = hook;
  ao.allocator.hami_core.device_memory_scaling = ao.device.device_memory_scaling;
  ao.allocator.hami_core.lib_cuda_log_level = ao.device.lib_cuda_log_level;
  ao.allocator.hami_core.disable_core_limit = ao.device.disable_core_limit;
  std::error_code license_error;
  ao.allocator.hami_core.license_present = fs::exists(hook + "/vgpu/license", license_error);
  ao.allocator.strategy.envvar = false;
  for (const std::string& s : SplitTrimmed(o.device_list_strategy, ',')) {
    if (s == "envvar") {
      ao.allocator.strategy.envvar = true;
    } else if (s == "cdi-cri") {
      ao.allocator.strategy.cdi_cri = true;
    } else if (s == "cdi-annotations") {
      ao.allocator.strategy.cdi_annotations = true;
    } else {
      return Fail("--device-list-strategy: unknown strategy \"" + s +
                  "\" (want envvar, cdi-cri or cdi-annotations)");
    }
  }
  ao.allocator.strategy.cdi_annotation_prefix = o.cdi_annotation_prefix;

  // Before any thread starts, so only the waiter below receives them.
  sigset_t stop_signals = BlockStopSignals();
  auto cluster = kube::DiscoverConfig(o.kubeconfig);
  if (!cluster.ok()) return Fail(cluster.error().message);
  kube::Client client(std::move(cluster.value()));
  agent_runtime::KubeNodeApi api(client, node_name);
  agent_runtime::AgentMetrics metrics;
  driver.value()->set_error_observer(
      [&metrics](const std::string& fn, int code) { metrics.NvmlError(fn, code); });
  agent_runtime::AgentProcess process(*driver.value(), api, ao, &metrics);
  // /metrics as serve's: auto is delegated, since the agent always has an API server here.
  // Made before the listener, so it outlives every request the listener answers.
  std::unique_ptr<kube::DelegatedAuthorizer> authorizer;
  agent_runtime::AgentHttp http(metrics, [&process] { return process.ready(); });
  if (o.read_auth != "none") {
    authorizer = std::make_unique<kube::DelegatedAuthorizer>(client);
    http.RequireReadAccess([a = authorizer.get()](std::string_view header, std::string_view path) {
      kube::AccessDecision d = a->Check(header, path, "get");
      if (d.status != 200) spdlog::debug("read {} refused ({}): {}", path, d.status, d.reason);
      return d;
    });
  }
  if (!o.http_bind.empty()) {
    if (auto s = http.Listen(o.http_bind); !s) return Fail(s.message());
  }

  std::atomic<bool> stop{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    stop = true;
  });

  api.Start([&process] { process.TriggerReconcile(); });
  if (auto s = process.Start([&] { return api.synced(); }); !s) {
    api.Stop();
    kill(getpid(), SIGTERM);
    waiter.join();
    return Fail(s.message());
  }
  spdlog::info("tessera agent on node {} is ready", node_name);
  process.Run([&] { return stop.load(); });
  api.Stop();
  waiter.join();
  return 0;
}

void AddAgentCommand(CLI::App& app) {
  auto* agent = app.add_subcommand(
      "agent",
      "Run the node agent: NVML discovery, registration, kubelet device plugin, MIG "
      "instances (docs/agent.md)");
  auto options = std::make_shared<AgentCommandOptions>();
  AddAgentFlags(*agent, *options);
  agent->callback([options] { EndCommand(RunAgentCommand(*options)); });
}

}  // namespace tessera::app
