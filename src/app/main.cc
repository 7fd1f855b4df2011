// tessera: a GPU scheduler for Kubernetes (HAMi-compatible sharing and Dynamic MIG).
// This file only wires subcommands to the layers below it.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "adapters/logging/log_setup.h"
#include "app/agent_command.h"
#include "app/explain_command.h"
#include "app/mig_replay_command.h"
#include "app/replay_command.h"
#include "app/serve_command.h"
#include "app/serve_flags.h"
#include "core/mig/catalog.h"
#include "core/mig/catalog_text.h"
#include "core/sched/plugin_registry.h"
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

}  // namespace

int main(int argc, char** argv) {
  tessera::logging::InstallProcessLogger();
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
  auto* plugins = app.add_subcommand(
      "plugins", "List the scheduling cycle's plugins by phase and the built-in node policies");

  auto* explain = app.add_subcommand(
      "explain", "Why a pending pod fits nowhere, per node and GPU, and what would make it fit");
  tessera::app::ExplainOptions eo;
  explain->add_option("pod", eo.pod, "NAMESPACE/NAME")->required();
  explain->add_option("--cluster", eo.cluster, "A scenario file, run first as `simulate` runs it");
  explain->add_option("--kubeconfig", eo.kubeconfig,
                      "A real cluster (default: $KUBECONFIG, then in-cluster)");
  explain->add_option("--device-config,--device-config-file", eo.device_config,
                      "HAMi device-config.yaml (a real cluster)");
  explain->add_option("--node-scheduler-policy", eo.node_policy, "as for serve (default tessera)");
  explain->add_option("--define-node-policy", eo.node_policy_definitions, "as for serve");
  explain->add_option("--gpu-scheduler-policy", eo.gpu_policy, "as for serve (default tessera)");
  explain->add_option("--node", eo.node, "Show this node's GPUs in full");
  explain->add_option("--output,-o", eo.output, "text or json")
      ->check(CLI::IsMember({"text", "json"}));

  auto* replay = app.add_subcommand(
      "replay",
      "Replay a GPU-sharing trace with the FGD paper's protocol (docs/replay.md), or with --mig "
      "run the MIG placement benchmark (docs/mig-replay.md)");
  tessera::app::ReplayOptions replay_options;
  tessera::app::MigReplayOptions mig_options;
  bool mig = false;
  replay->add_flag("--mig", mig,
                   "Run the MIG placement benchmark instead (--nodes and --pods not needed)");
  auto* nodes_option = replay->add_option("--nodes", replay_options.nodes_csv,
                                          "Node list CSV (required without --mig)");
  auto* pods_option =
      replay
          ->add_option("--pods", replay_options.pods_csv,
                       "Pod list CSVs, or a folder for every *pod_list*.csv in it (required "
                       "without --mig)")
          ->delimiter(',');
  auto* policy_option =
      replay
          ->add_option("--policy", replay_options.policies,
                       "Policies: random, dotprod, gpuclustering, gpupacking, bestfit, fgd, "
                       "tessera; with --mig: tessera, hami-2.10, hami-master, first-fit, best-fit, "
                       "static-1g, static-balanced (default: these), largest-free-run or "
                       "tessera-gpu-binpack")
          ->delimiter(',');
  auto* seeds_option = replay->add_option("--seeds", replay_options.seeds,
                                          "Seeds, e.g. 42-51 or 1,2,3 (--mig default 42-46)");
  replay->add_option("--tune", replay_options.tune, "Workload inflation (1.3 = 130%)");
  replay->add_option("--out", replay_options.out_dir, "Write summary.csv, runs.csv, report.html");
  replay->add_option("--jobs", replay_options.jobs, "Runs in parallel (results do not change)");
  replay
      ->add_option("--fleet", mig_options.run.fleets,
                   "--mig: fleets (a100-40gb, a100-80gb, h100-80gb, h200-141gb, b200-180gb, "
                   "rtx-pro-6000, mixed, mixed-rtx; default all)")
      ->delimiter(',');
  replay
      ->add_option("--workload", mig_options.run.workloads,
                   "--mig: workloads (uniform, small-heavy, large-heavy, memory-mix, multi-small, "
                   "multi-mixed, multi-memory, openb; "
                   "default all but openb, and openb when --trace is given)")
      ->delimiter(',');
  replay->add_option("--trace", mig_options.run.trace_csv, "--mig: openb pod list CSV");
  replay
      ->add_option("--nodes-per-fleet", mig_options.run.nodes_per_fleet,
                   "--mig: nodes per fleet (8 GPUs each; 2 on mixed-rtx)")
      ->capture_default_str();
  replay
      ->add_option("--placement-bound-max-gpus", mig_options.run.placement_bound_max_gpus,
                   "--mig: fleets of at most this many GPUs also get the placement LP bound "
                   "(saturation and steady state; 0: never)")
      ->capture_default_str();
  replay->add_option("--loads", mig_options.run.loads, "--mig: steady-state offered loads")
      ->delimiter(',')
      ->capture_default_str();
  replay
      ->add_option("--stop-after-rejections", mig_options.run.stop_after_rejections,
                   "--mig: consecutive rejections that end a saturation run (0: never)")
      ->capture_default_str();
  replay->add_flag("--no-optimum", mig_options.run.skip_optimum,
                   "--mig: skip the offline-optimum study on tiny instances");
  replay->add_flag("--no-pending", mig_options.run.skip_pending,
                   "--mig: skip the steady state with a pending queue (pending-L protocols)");
  replay->add_option("--reference", replay_options.reference_csv,
                     "Published summary CSV to compare with (fgd_expected_summary.csv)");
  replay->add_flag("--no-bound", replay_options.skip_bound,
                   "Skip the LP upper bound on the allocation at 130% (docs/replay.md)");
  replay->add_option("--define-node-policy", replay_options.node_policy_definitions,
                     "NAME=PLUGIN:WEIGHT[,PLUGIN:WEIGHT...]: tessera under this node policy is the "
                     "policy tessera:NAME, for --policy (repeatable; docs/placement.md)");
  replay->add_option("--tie-break", replay_options.tie_break, "first (the paper) or uniform")
      ->check(CLI::IsMember({"first", "uniform"}));

  auto* serve = app.add_subcommand(
      "serve", "Run the kube-scheduler extender and mutating webhook (docs/serve.md)");
  tessera::app::ServeOptions so;
  tessera::app::AddServeFlags(*serve, so);

  auto* agent = app.add_subcommand(
      "agent",
      "Run the node agent: NVML discovery, registration, kubelet device plugin, MIG "
      "instances (docs/agent.md)");
  tessera::app::AgentCommandOptions ao;
  agent->add_option("--node-name", ao.node_name, "This node (default: $NODE_NAME)");
  agent->add_option("--kubeconfig", ao.kubeconfig,
                    "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  agent
      ->add_option("--nvml-library", ao.nvml_library,
                   "NVML to load: the driver's, or libtessera-nvml-sim.so")
      ->capture_default_str();
  agent->add_option("--device-config-file,--config-file", ao.device_config,
                    "HAMi device-config.yaml");
  agent->add_option("--node-config-file", ao.node_config, "Per-node overrides (HAMi config.json)")
      ->capture_default_str();
  agent->add_option("--plugin-dir", ao.plugin_dir, "The kubelet's device-plugin folder")
      ->capture_default_str();
  agent
      ->add_option("--kubelet-socket", ao.kubelet_socket,
                   "The kubelet's registration socket (\"\" = do not serve the kubelet)")
      ->capture_default_str();
  agent->add_option("--ledger", ao.ledger, "Where the agent records the MIG instances it made")
      ->capture_default_str();
  agent->add_option("--hook-path", ao.hook_path,
                    "HAMi-core's host folder (default: $HOOK_PATH or /usr/local/vgpu)");
  agent->add_option("--http-bind", ao.http_bind, "/healthz, /readyz and /metrics (\"\" = off)")
      ->capture_default_str();
  agent
      ->add_option("--read-auth", ao.read_auth,
                   "Who may read /metrics: auto (= delegated), delegated (a bearer token the API "
                   "server accepts and allows to get /metrics) or none")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "delegated", "none"}));
  agent->add_option("--register-interval", ao.register_interval, "Re-discovery period")
      ->capture_default_str();
  agent->add_option("--reconcile-interval", ao.reconcile_interval, "MIG reconcile period")
      ->capture_default_str();
  agent
      ->add_option("--reconcile-grace", ao.reconcile_grace,
                   "An instance is reclaimed once a pod view newer than its ledger entry by this "
                   "shows its pod gone (the view may lag), or a read of the pod proves it gone")
      ->capture_default_str();
  agent
      ->add_option("--fail-lost-after", ao.fail_lost_after,
                   "A live pod whose MIG instance is gone and cannot be made again for this long "
                   "is set Failed so its controller replaces it; one whose instance came back "
                   "under a new MIG UUID is failed at once (0s: never fail pods)")
      ->capture_default_str();
  agent
      ->add_option("--health-recovery", ao.health_recovery,
                   "Quiet time after a fatal XID before a GPU is healthy again (0 = never)")
      ->capture_default_str();
  agent
      ->add_option("--device-list-strategy", ao.device_list_strategy,
                   "envvar, cdi-cri, cdi-annotations (comma list)")
      ->capture_default_str();
  agent->add_option("--cdi-annotation-prefix", ao.cdi_annotation_prefix, "CDI annotation prefix")
      ->capture_default_str();
  agent
      ->add_option("--cdi-spec-dir", ao.cdi_spec_dir,
                   "Where the CDI spec of tessera's MIG instances is written (CDI strategies)")
      ->capture_default_str();
  agent
      ->add_option("--driver-proc-root", ao.driver_proc_root,
                   "Where the NVIDIA driver's /proc files are (device minors for the CDI spec)")
      ->capture_default_str();
  agent->add_option("--sysfs-root", ao.sysfs_root, "Where /sys is (NUMA lookup)")
      ->capture_default_str();
  agent->add_flag("--reclaim-foreign", ao.reclaim_foreign,
                  "Also destroy unclaimed MIG instances that tessera did not create");
  agent->add_flag("--set-mig-mode", ao.set_mig_mode,
                  "Enable MIG mode on a GPU of a mig node whose MIG mode is off, when no compute "
                  "process uses it (needs root; the driver may reset the GPU)");
  agent->add_flag("--discover-only", ao.discover_only,
                  "Print what NVML reports and what would be registered, then exit (read-only)");
  agent->add_option("--log-level", ao.log_level, "debug, info or warn")->capture_default_str();

  // HAMi's chart passes klog's single-dash `-v=4` to the scheduler; CLI11 wants `--v=4`.
  std::vector<std::string> args =
      tessera::app::NormalizeServeArgs(std::vector<std::string>(argv, argv + argc));
  std::vector<char*> arg_ptrs;
  arg_ptrs.reserve(args.size() + 1);
  for (auto& a : args) arg_ptrs.push_back(a.data());
  const int arg_count = static_cast<int>(arg_ptrs.size());
  arg_ptrs.push_back(nullptr);
  CLI11_PARSE(app, arg_count, arg_ptrs.data());
  if (serve->parsed()) return tessera::app::RunServeCommand(so);
  if (agent->parsed()) return tessera::app::RunAgentCommand(ao);
  if (explain->parsed()) return tessera::app::RunExplainCommand(eo);
  if (plugins->parsed()) {
    std::cout << tessera::sched::PluginTableText();
    return 0;
  }

  auto catalog = GpuModelCatalog::Builtin();
  if (!catalog.ok()) return Fail("built-in MIG table: " + catalog.error().message);

  if (demo->parsed()) return RunDemo(catalog.value());
  if (models->parsed()) {
    std::cout << tessera::mig::CatalogText(catalog.value());
    return 0;
  }
  if (replay->parsed() && mig) {
    mig_options.run.policies = replay_options.policies;
    if (seeds_option->count() > 0) mig_options.seeds = replay_options.seeds;
    mig_options.run.out_dir = replay_options.out_dir;
    mig_options.run.jobs = replay_options.jobs;
    mig_options.node_policy_definitions = replay_options.node_policy_definitions;
    return tessera::app::RunMigReplayCommand(mig_options);
  }
  if (replay->parsed()) {
    if (nodes_option->count() == 0 || pods_option->count() == 0 || policy_option->count() == 0) {
      return Fail(
          "replay: --nodes, --pods and --policy are required (or --mig for the MIG benchmark)");
    }
    return tessera::app::RunReplayCommand(replay_options);
  }
  if (simulate->parsed()) {
    auto scenario = tessera::sim::LoadScenarioFile(scenario_path, catalog.value());
    if (!scenario.ok()) return Fail(scenario.error().message);
    for (const auto& w : scenario->config.warnings) std::cerr << "tessera: warning: " << w << "\n";
    return RunSimulation(std::move(scenario.value()), output == "json");
  }
  return 0;
}
