// Fuzzes the scheduler configuration path: YAML text -> JSON -> SchedulerConfig.

#include <cstddef>
#include <cstdint>
#include <string>

#include "adapters/yaml/yaml_json.h"
#include "core/config/config_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto json = tessera::adapters::ParseYaml(text, "fuzz");
  if (!json.ok()) return 0;
  auto config = tessera::config::DecodeSchedulerConfig(json.value());
  (void)config.ok();
  return 0;
}
