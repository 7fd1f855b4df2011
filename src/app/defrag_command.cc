#include "app/defrag_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>

#include "adapters/kube/client.h"
#include "adapters/kube/config.h"
#include "app/cluster_snapshot.h"
#include "app/command_support.h"
#include "app/defrag_execute.h"
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

sched::DefragLimits LimitsOf(const DefragOptions& o) {
  sched::DefragLimits limits;
  limits.max_evictions = o.max_evictions;
  limits.min_gain = o.min_gain;
  limits.min_fragmentation_drop = o.min_fragmentation_drop;
  return limits;
}

int DefragScenario(const DefragOptions& o) {
  auto catalog = mig::GpuModelCatalog::Builtin();
  if (!catalog.ok()) return Fail("built-in MIG table: " + catalog.error().message);
  auto scenario = sim::LoadScenarioFile(o.cluster, catalog.value());
  if (!scenario.ok()) return Fail(scenario.error().message);
  const sched::PolicyDefaults policy = scenario->policy;
  const std::vector<model::DisruptionBudget> budgets = scenario->budgets;
  const std::vector<model::JobRetries> jobs = scenario->jobs;
  sim::Simulator simulator(std::move(scenario.value()));
  simulator.RunAll();
  const std::vector<model::Pod> running = simulator.running();
  // The demand the simulated scheduler observed: every pod of the scenario, ended ones too.
  const sched::ObservedDemand observed{&simulator.scheduler().demand_mix(),
                                       &simulator.scheduler().mig_demand_mix()};
  const sched::DefragPlan plan = sched::PlanDefrag(simulator.state(), simulator.pending(), running,
                                                   policy, budgets, jobs, LimitsOf(o), observed);
  std::cout << (o.output == "json" ? sched::DefragPlanToJson(plan).dump(2) + "\n"
                                   : sched::FormatDefragPlan(plan));
  return 0;
}

// A real cluster: listed once, planned on as serve's /defrag plans; with --execute, carried out.
int DefragCluster(const DefragOptions& o) {
  auto config = LoadDeviceConfig(o.device_config);
  if (!config.ok()) return Fail(config.error().message, 2);
  auto cluster = kube::DiscoverConfig(o.kubeconfig);
  if (!cluster.ok()) return Fail(cluster.error().message);
  kube::Client client(std::move(cluster.value()));
  sched::DefragLimits limits = LimitsOf(o);
  if (o.execute) {
    auto spent = EvictionsInTheLastHour(client);
    if (!spent.ok()) return Fail("counting the last hour's evictions: " + spent.error().message);
    const int left = std::max(0, o.max_evictions_per_hour - *spent);
    if (left < limits.max_evictions) {
      std::cout << "the last hour's evictions (" << *spent << " of --max-evictions-per-hour "
                << o.max_evictions_per_hour << ") leave " << left << " for this plan\n";
    }
    limits.max_evictions = std::min(limits.max_evictions, left);
  }
  scheduler::ServiceOptions so;
  so.webhook.scheduler_name = o.scheduler_name;
  auto snapshot = ClusterSnapshot::List(client, std::move(config.value()), so, true);
  if (!snapshot.ok()) return Fail(snapshot.error().message);
  const scheduler::DefragResult planned =
      (*snapshot)->service().reads.Defrag(limits, o.output == "json");
  if (!o.execute) {
    std::cout << planned.body;
    return 0;
  }
  std::cout << sched::FormatDefragPlan(planned.plan, true) << "executing:\n";
  DefragExecution run;
  run.step_timeout = std::chrono::seconds(o.step_timeout_seconds);
  if (o.grace_period_seconds >= 0) run.grace_period_seconds = o.grace_period_seconds;
  const DefragOutcome done = ExecuteDefragPlan(client, planned.plan, run, std::cout);
  if (!done.stopped.empty()) return Fail(done.stopped);
  std::cout << "done: " << done.evictions << " eviction" << (done.evictions == 1 ? "" : "s");
  if (done.moved > 0) std::cout << ", " << done.moved << " moved as planned";
  std::cout << "\n";
  return 0;
}

}  // namespace

int RunDefragCommand(const DefragOptions& o) {
  if (!o.cluster.empty() && !o.kubeconfig.empty()) {
    return Fail("--cluster and --kubeconfig are exclusive: one cluster source at a time", 2);
  }
  if (o.max_evictions < 0) return Fail("--max-evictions must be 0 or more", 2);
  if (o.max_evictions_per_hour < 0) return Fail("--max-evictions-per-hour must be 0 or more", 2);
  if (o.step_timeout_seconds <= 0) return Fail("--step-timeout must be above 0 seconds", 2);
  if (o.min_gain <= 0 || o.min_fragmentation_drop <= 0) {
    return Fail("--min-gain and --min-fragmentation-drop must be above 0", 2);
  }
  if (o.execute && !o.cluster.empty()) {
    return Fail("--execute acts on a real cluster (--kubeconfig), not on a scenario file", 2);
  }
  if (o.execute && o.output == "json") {
    return Fail("--execute reports as text; plan with -o json without it", 2);
  }
  return o.cluster.empty() ? DefragCluster(o) : DefragScenario(o);
}

void AddDefragCommand(CLI::App& app) {
  auto* defrag = app.add_subcommand(
      "defrag",
      "Which pods to move so pending pods fit or placeability rises, and where they go (a dry run "
      "unless --execute)");
  auto o = std::make_shared<DefragOptions>();
  defrag->add_option("--cluster", o->cluster, "A scenario file, run first as `simulate` runs it");
  defrag->add_option("--kubeconfig", o->kubeconfig,
                     "A real cluster (default: $KUBECONFIG, then in-cluster)");
  defrag->add_option("--device-config,--device-config-file", o->device_config,
                     "HAMi device-config.yaml (a real cluster)");
  defrag->add_option("--scheduler-name", o->scheduler_name,
                     "Whose unbound pods are pending (a real cluster; default tessera-scheduler)");
  defrag->add_option("--output,-o", o->output, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  defrag->add_option("--max-evictions", o->max_evictions, "Evictions per plan (default 4)");
  defrag->add_option("--min-gain", o->min_gain,
                     "A move's least gain of MIG placeability, GiB (default 1)");
  defrag->add_option("--min-fragmentation-drop", o->min_fragmentation_drop,
                     "A move's least drop of sharing fragmentation, GPUs (default 0.1)");
  defrag->add_flag("--execute", o->execute,
                   "Evict as planned through the Eviction API, one pending pod at a time, and stop "
                   "at the first step that does not deliver (a real cluster)");
  defrag->add_option("--max-evictions-per-hour", o->max_evictions_per_hour,
                     "With --execute: evictions in any hour, counted from earlier runs' Events "
                     "(default 6)");
  defrag->add_option("--step-timeout", o->step_timeout_seconds,
                     "With --execute: seconds a step may take to deliver (default 120)");
  defrag->add_option("--grace-period", o->grace_period_seconds,
                     "With --execute: the evicted pods' grace period in seconds (default: their "
                     "own)");
  defrag->callback([o] { EndCommand(RunDefragCommand(*o)); });
}

}  // namespace tessera::app
