#include "app/demo_command.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "app/command_support.h"
#include "core/mig/catalog.h"
#include "sim/demo.h"
#include "sim/report.h"
#include "sim/scenario.h"

namespace tessera::app {
namespace {

int RunDemo() {
  auto catalog = mig::GpuModelCatalog::Builtin();
  if (!catalog.ok()) return PrintFailure("built-in MIG table: " + catalog.error().message);
  for (const auto& part : sim::DemoParts()) {
    auto scenario = sim::LoadScenarioText(part.scenario, catalog.value(), part.source);
    if (!scenario.ok()) return PrintFailure(scenario.error().message);
    std::cout << "=== " << part.title << " (" << part.source << ")\n\n";
    for (const auto& w : scenario->config.warnings) std::cout << "warning: " << w << "\n";
    sim::WriteSimulation(std::move(scenario.value()), {}, std::cout);
  }
  return 0;
}

}  // namespace

void AddDemoCommand(CLI::App& app) {
  auto* command = app.add_subcommand("demo", "Run the built-in scenarios (no files, no cluster)");
  command->callback([] { EndCommand(RunDemo()); });
}

}  // namespace tessera::app
