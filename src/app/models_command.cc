#include "app/models_command.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "app/command_support.h"
#include "core/mig/catalog.h"
#include "core/mig/catalog_text.h"

namespace tessera::app {
namespace {

int RunModels(const std::string& device_config_path) {
  auto catalog = mig::GpuModelCatalog::Builtin();
  if (!catalog.ok()) return PrintFailure("built-in MIG table: " + catalog.error().message);
  if (device_config_path.empty()) {
    std::cout << mig::CatalogText(catalog.value());
    return 0;
  }
  auto config = LoadDeviceConfig(device_config_path);
  if (!config.ok()) return PrintFailure(config.error().message);
  std::cout << mig::CatalogText(catalog.value(), &config->nvidia);
  return 0;
}

}  // namespace

void AddModelsCommand(CLI::App& app) {
  auto* command = app.add_subcommand("models", "List the built-in GPU models and MIG profiles");
  auto device_config_path = std::make_shared<std::string>();
  command->add_option(
      "--device-config,--device-config-file", *device_config_path,
      "HAMi device-config.yaml: also show the profiles its allowlist gives each model");
  command->callback([device_config_path] { EndCommand(RunModels(*device_config_path)); });
}

}  // namespace tessera::app
