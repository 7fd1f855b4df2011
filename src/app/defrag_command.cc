#include "app/defrag_command.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "app/command_support.h"
#include "core/mig/catalog.h"
#include "core/sched/defrag.h"
#include "core/sched/defrag_format.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace tessera::app {
namespace {

int Fail(const std::string& message, int code = 1) {
  std::cerr << "tessera defrag: " << message << "\n";
  return code;
}

}  // namespace

int RunDefragCommand(const DefragOptions& o) {
  if (o.cluster.empty()) return Fail("--cluster is required (a scenario file)", 2);
  if (o.max_evictions < 0) return Fail("--max-evictions must be 0 or more", 2);
  if (o.min_gain <= 0 || o.min_fragmentation_drop <= 0) {
    return Fail("--min-gain and --min-fragmentation-drop must be above 0", 2);
  }
  auto catalog = mig::GpuModelCatalog::Builtin();
  if (!catalog.ok()) return Fail("built-in MIG table: " + catalog.error().message);
  auto scenario = sim::LoadScenarioFile(o.cluster, catalog.value());
  if (!scenario.ok()) return Fail(scenario.error().message);
  const sched::PolicyDefaults policy = scenario->policy;
  sim::Simulator simulator(std::move(scenario.value()));
  simulator.RunAll();
  sched::DefragLimits limits;
  limits.max_evictions = o.max_evictions;
  limits.min_gain = o.min_gain;
  limits.min_fragmentation_drop = o.min_fragmentation_drop;
  const std::vector<model::Pod> running = simulator.running();
  // A scenario has no PodDisruptionBudgets.
  // The demand the simulated scheduler observed: every pod of the scenario, ended ones too.
  const sched::ObservedDemand observed{&simulator.scheduler().demand_mix(),
                                       &simulator.scheduler().mig_demand_mix()};
  const sched::DefragPlan plan = sched::PlanDefrag(simulator.state(), simulator.pending(), running,
                                                   policy, {}, limits, observed);
  std::cout << (o.output == "json" ? sched::DefragPlanToJson(plan).dump(2) + "\n"
                                   : sched::FormatDefragPlan(plan));
  return 0;
}

void AddDefragCommand(CLI::App& app) {
  auto* defrag = app.add_subcommand(
      "defrag",
      "Which pods to move so pending pods fit or placeability rises, and where they go (dry run)");
  auto o = std::make_shared<DefragOptions>();
  defrag->add_option("--cluster", o->cluster, "A scenario file, run first as `simulate` runs it")
      ->required();
  defrag->add_option("--output,-o", o->output, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  defrag->add_option("--max-evictions", o->max_evictions, "Evictions per plan (default 4)");
  defrag->add_option("--min-gain", o->min_gain,
                     "A move's least gain of MIG placeability, GiB (default 1)");
  defrag->add_option("--min-fragmentation-drop", o->min_fragmentation_drop,
                     "A move's least drop of sharing fragmentation, GPUs (default 0.1)");
  defrag->callback([o] { EndCommand(RunDefragCommand(*o)); });
}

}  // namespace tessera::app
