#include "app/plugins_command.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "app/command_support.h"
#include "core/sched/plugin_registry.h"

namespace tessera::app {

void AddPluginsCommand(CLI::App& app) {
  auto* command = app.add_subcommand(
      "plugins", "List the scheduling cycle's plugins by phase and the built-in node policies");
  command->callback([] {
    std::cout << sched::PluginTableText();
    EndCommand(0);
  });
}

}  // namespace tessera::app
