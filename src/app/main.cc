// tessera: a GPU scheduler for Kubernetes (HAMi-compatible sharing and Dynamic MIG).
// This file only wires subcommands to the layers below it.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <string>

#include "app/replay_command.h"
#include "core/mig/catalog.h"
#include "sim/demo.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace {

using tessera::mig::GpuModelCatalog;

int Fail(const std::string& message) {
  std::cerr << "tessera: " << message << "\n";
  return 1;
}

void PrintResults(const std::vector<tessera::sim::StepResult>& results, bool json,
                  const tessera::state::ClusterState& state, bool map_after_step) {
  for (const auto& r : results) {
    if (json) {
      std::cout << tessera::sim::StepJson(r) << "\n";
    } else {
      std::cout << tessera::sim::StepText(r);
    }
  }
  if (!json && map_after_step) std::cout << tessera::sim::ClusterText(state) << "\n";
}

int RunSimulation(tessera::sim::Scenario scenario, bool json) {
  tessera::sim::Simulator sim(std::move(scenario));
  if (!json) std::cout << "initial state\n" << tessera::sim::ClusterText(sim.state()) << "\n";
  for (size_t i = 0; i < sim.step_count(); ++i) {
    PrintResults(sim.RunStep(i), json, sim.state(), true);
  }
  if (json) std::cout << tessera::sim::FinalJson(sim.state()) << "\n";
  return 0;
}

int RunDemo(const GpuModelCatalog& catalog) {
  for (const auto& part : tessera::sim::DemoParts()) {
    auto scenario = tessera::sim::LoadScenarioText(part.scenario, catalog, part.source);
    if (!scenario.ok()) return Fail(scenario.error().message);
    std::cout << "=== " << part.title << " (" << part.source << ")\n\n";
    for (const auto& w : scenario->config.warnings) std::cout << "warning: " << w << "\n";
    int rc = RunSimulation(std::move(scenario.value()), false);
    if (rc != 0) return rc;
  }
  return 0;
}

int ListModels(const GpuModelCatalog& catalog) {
  for (const auto& m : catalog.models()) {
    std::cout << m.model << (m.complete ? "" : " (no verified placements: sharing mode only)")
              << "\n  aliases: ";
    for (size_t i = 0; i < m.aliases.size(); ++i) std::cout << (i ? ", " : "") << m.aliases[i];
    std::cout << "\n  " << m.memory_mib << " MiB, " << m.memory_slices << " memory slices, "
              << m.compute_slices << " compute slices\n";
    for (const auto& p : m.profiles) {
      std::cout << "    " << p.name << ": " << p.memory_mib << " MiB, " << p.core
                << "% cores, placements";
      for (const auto& pl : p.placements) std::cout << " " << pl.start << "+" << pl.size;
      std::cout << "\n";
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tessera: GPU sharing and Dynamic MIG scheduling for Kubernetes"};
  app.require_subcommand(1);

  auto* demo = app.add_subcommand("demo", "Run the built-in scenarios (no files, no cluster)");

  auto* simulate = app.add_subcommand("simulate", "Run a scenario file through the scheduler");
  std::string scenario_path;
  std::string output = "text";
  simulate->add_option("scenario", scenario_path, "Scenario file (YAML or JSON)")->required();
  simulate->add_option("--output,-o", output, "text or json (JSON Lines)")
      ->check(CLI::IsMember({"text", "json"}));

  auto* models = app.add_subcommand("models", "List the built-in GPU models and MIG profiles");

  auto* replay = app.add_subcommand(
      "replay", "Replay a GPU-sharing trace with the FGD paper's protocol (docs/replay.md)");
  tessera::app::ReplayOptions replay_options;
  replay->add_option("--nodes", replay_options.nodes_csv, "Node list CSV")->required();
  replay->add_option("--pods", replay_options.pods_csv, "Pod list CSV")->required();
  replay
      ->add_option("--policy", replay_options.policies,
                   "Policies: random, dotprod, gpuclustering, gpupacking, bestfit, fgd, tessera")
      ->delimiter(',')
      ->required();
  replay->add_option("--seeds", replay_options.seeds, "Seeds, e.g. 42-51 or 1,2,3");
  replay->add_option("--tune", replay_options.tune, "Workload inflation (1.3 = 130%)");
  replay->add_option("--out", replay_options.out_dir, "Write summary.csv, runs.csv, report.html");
  replay->add_option("--jobs", replay_options.jobs, "Seeds run in parallel");
  replay->add_option("--reference", replay_options.reference_csv,
                     "Published summary CSV to compare with (fgd_expected_summary.csv)");
  replay->add_option("--tie-break", replay_options.tie_break, "first (the paper) or uniform")
      ->check(CLI::IsMember({"first", "uniform"}));

  CLI11_PARSE(app, argc, argv);

  auto catalog = GpuModelCatalog::Builtin();
  if (!catalog.ok()) return Fail("built-in MIG table: " + catalog.error().message);

  if (demo->parsed()) return RunDemo(catalog.value());
  if (models->parsed()) return ListModels(catalog.value());
  if (replay->parsed()) return tessera::app::RunReplayCommand(replay_options);
  if (simulate->parsed()) {
    auto scenario = tessera::sim::LoadScenarioFile(scenario_path, catalog.value());
    if (!scenario.ok()) return Fail(scenario.error().message);
    for (const auto& w : scenario->config.warnings) std::cerr << "tessera: warning: " << w << "\n";
    return RunSimulation(std::move(scenario.value()), output == "json");
  }
  return 0;
}
