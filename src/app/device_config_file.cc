#include "app/device_config_file.h"

#include "adapters/yaml/yaml_json.h"
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

}  // namespace tessera::app
