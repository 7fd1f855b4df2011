// tessera: a GPU scheduler for Kubernetes (HAMi-compatible sharing and Dynamic MIG).
// This file only dispatches: each command adds itself, with its flags, to the command line and
// runs when it is parsed (app/<command>_command.h).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "adapters/logging/log_setup.h"
#include "app/agent_command.h"
#include "app/defrag_command.h"
#include "app/demo_command.h"
#include "app/explain_command.h"
#include "app/migrate_values_command.h"
#include "app/models_command.h"
#include "app/plugins_command.h"
#include "app/replay_command.h"
#include "app/serve_command.h"
#include "app/serve_flags.h"
#include "app/simulate_command.h"

int main(int argc, char** argv) {
  tessera::logging::InstallProcessLogger();
  CLI::App app{"tessera: GPU sharing and Dynamic MIG scheduling for Kubernetes"};
  app.require_subcommand(1);
  // In the order `tessera --help` lists them.
  tessera::app::AddDemoCommand(app);
  tessera::app::AddSimulateCommand(app);
  tessera::app::AddModelsCommand(app);
  tessera::app::AddPluginsCommand(app);
  tessera::app::AddExplainCommand(app);
  tessera::app::AddDefragCommand(app);
  tessera::app::AddReplayCommand(app);
  tessera::app::AddMigrateValuesCommand(app);
  tessera::app::AddServeCommand(app);
  tessera::app::AddAgentCommand(app);

  // HAMi's chart passes klog's single-dash `-v=4` to the scheduler; CLI11 wants `--v=4`.
  std::vector<std::string> args =
      tessera::app::NormalizeServeArgs(std::vector<std::string>(argv, argv + argc));
  std::vector<char*> arg_ptrs;
  arg_ptrs.reserve(args.size() + 1);
  for (auto& a : args) arg_ptrs.push_back(a.data());
  const int arg_count = static_cast<int>(arg_ptrs.size());
  arg_ptrs.push_back(nullptr);
  // The parsed command runs inside the parse and ends it with its exit code (EndCommand).
  CLI11_PARSE(app, arg_count, arg_ptrs.data());
  return 0;
}
