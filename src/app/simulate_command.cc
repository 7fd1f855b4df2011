#include "app/simulate_command.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "app/command_support.h"
#include "core/mig/catalog.h"
#include "sim/report.h"
#include "sim/scenario.h"

namespace tessera::app {
namespace {

struct SimulateOptions {
  std::string scenario_path;
  std::string output = "text";  // text or json (JSON Lines)
  bool final_only = false;      // text: the decisions and the final state only
};

int RunSimulate(const SimulateOptions& options) {
  auto catalog = mig::GpuModelCatalog::Builtin();
  if (!catalog.ok()) return PrintFailure("built-in MIG table: " + catalog.error().message);
  auto scenario = sim::LoadScenarioFile(options.scenario_path, catalog.value());
  if (!scenario.ok()) return PrintFailure(scenario.error().message);
  for (const auto& w : scenario->config.warnings) std::cerr << "tessera: warning: " << w << "\n";
  sim::WriteSimulation(std::move(scenario.value()), {options.output == "json", options.final_only},
                       std::cout);
  return 0;
}

}  // namespace

void AddSimulateCommand(CLI::App& app) {
  auto* command = app.add_subcommand("simulate", "Run a scenario file through the scheduler");
  auto options = std::make_shared<SimulateOptions>();
  command->add_option("scenario", options->scenario_path, "Scenario file (YAML or JSON)")
      ->required();
  command->add_option("--output,-o", options->output, "text or json (JSON Lines)")
      ->check(CLI::IsMember({"text", "json"}));
  command->add_flag("--final-only,--quiet,-q", options->final_only,
                    "Text: print the decisions and the final state only (no map after each step)");
  command->callback([options] { EndCommand(RunSimulate(*options)); });
}

}  // namespace tessera::app
