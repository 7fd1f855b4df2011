#include "app/command_support.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "adapters/yaml/yaml_json.h"
#include "core/common/duration.h"
#include "core/config/config_codec.h"

namespace tessera::app {

Result<config::SchedulerConfig> LoadDeviceConfig(const std::string& path) {
  if (path.empty()) return config::SchedulerConfig{};
  auto text = adapters::ReadFile(path);
  if (!text.ok()) return text.error();
  auto json = adapters::ParseYaml(text.value(), "device config " + path);
  if (!json.ok()) return json.error();
  auto cfg = config::DecodeSchedulerConfig(*json);
  if (!cfg.ok()) return Error{"device config " + path + ": " + cfg.error().message};
  return cfg;
}

Result<std::chrono::milliseconds> DurationFlag(const std::string& flag, const std::string& text) {
  auto duration = ParseDuration(text);  // refuses negative durations too
  if (!duration.ok()) return Error{flag + " " + text + ": want a duration such as 5s, 2m or 1m30s"};
  return duration.value();
}

sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

int PrintFailure(const std::string& message) {
  std::cerr << "tessera: " << message << "\n";
  return 1;
}

void EndCommand(int exit_code) {
  if (exit_code == 0) throw CLI::Success();
  throw CLI::RuntimeError(exit_code);
}

}  // namespace tessera::app
