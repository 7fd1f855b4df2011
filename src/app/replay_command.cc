#include "app/replay_command.h"

#include <CLI/CLI.hpp>
#include <memory>

#include "app/command_support.h"
#include "app/mig_replay_command.h"
#include "core/sched/node_policy.h"
#include "sim/replay/trace_replay.h"

namespace tessera::app {

Result<std::vector<uint64_t>> ParseSeeds(const std::string& text) {
  std::vector<uint64_t> seeds;
  for (size_t begin = 0; begin <= text.size();) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    std::string part = text.substr(begin, end - begin);
    begin = end + 1;
    if (part.empty()) continue;
    size_t dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        seeds.push_back(std::stoull(part));
      } else {
        uint64_t a = std::stoull(part.substr(0, dash));
        uint64_t b = std::stoull(part.substr(dash + 1));
        if (b < a || b - a > 10000) return Error{"--seeds: bad range \"" + part + "\""};
        for (uint64_t s = a; s <= b; ++s) seeds.push_back(s);
      }
    } catch (const std::exception&) {
      return Error{"--seeds: \"" + part + "\" is not a seed or a range like 42-51"};
    }
  }
  if (seeds.empty()) return Error{"--seeds: no seeds"};
  return seeds;
}

int RunReplayCommand(const ReplayOptions& o) {
  auto seeds = ParseSeeds(o.seeds);
  if (!seeds.ok()) return PrintFailure(seeds.error().message);
  sim::replay::TraceReplayOptions r;
  r.nodes_csv = o.nodes_csv;
  r.pods_csv = o.pods_csv;
  r.policies = o.policies;
  r.seeds = std::move(seeds.value());
  r.tune = o.tune;
  r.out_dir = o.out_dir;
  r.jobs = o.jobs;
  r.reference_csv = o.reference_csv;
  r.tie_break = o.tie_break == "uniform" ? sim::replay::TieBreak::kUniform
                                         : sim::replay::TieBreak::kFirstInNodeOrder;
  r.skip_bound = o.skip_bound;
  auto node_policies = sched::ParseNodePolicyDefinitions(o.node_policy_definitions);
  if (!node_policies.ok()) {
    return PrintFailure("--define-node-policy: " + node_policies.error().message);
  }
  r.node_policies = std::move(node_policies.value());
  const Status done = sim::replay::ReplayTraces(r);
  if (!done.ok()) return PrintFailure(done.message());
  return 0;
}

namespace {

// Both replays' flags as typed; which one runs is decided after the parse (--mig).
struct ReplayFlags {
  ReplayOptions trace;
  MigReplayOptions mig;
  bool run_mig = false;
  bool seeds_given = false;         // --mig keeps its own default seeds otherwise
  bool trace_inputs_given = false;  // --nodes, --pods and --policy, all three
};

int RunReplayFlags(ReplayFlags& flags) {
  if (flags.run_mig) {
    flags.mig.run.policies = flags.trace.policies;
    if (flags.seeds_given) flags.mig.seeds = flags.trace.seeds;
    flags.mig.run.out_dir = flags.trace.out_dir;
    flags.mig.run.jobs = flags.trace.jobs;
    flags.mig.node_policy_definitions = flags.trace.node_policy_definitions;
    return RunMigReplayCommand(flags.mig);
  }
  if (!flags.trace_inputs_given) {
    return PrintFailure(
        "replay: --nodes, --pods and --policy are required (or --mig for the MIG benchmark)");
  }
  return RunReplayCommand(flags.trace);
}

}  // namespace

void AddReplayCommand(CLI::App& app) {
  auto* replay = app.add_subcommand(
      "replay",
      "Replay a GPU-sharing trace with the FGD paper's protocol (docs/replay.md), or with --mig "
      "run the MIG placement benchmark (docs/mig-replay.md)");
  auto flags = std::make_shared<ReplayFlags>();
  ReplayOptions& replay_options = flags->trace;
  MigReplayOptions& mig_options = flags->mig;
  replay->add_flag("--mig", flags->run_mig,
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
  replay
      ->add_option("--defrag-evictions-per-hour", mig_options.run.defrag_evictions_per_hour,
                   "--mig: budgets N (comma-separated; 0: off): adds tessera+defrag-N on the "
                   "pending-L protocols, tessera with the defragmentation planner (docs/defrag.md)")
      ->delimiter(',');
  replay
      ->add_option("--defrag-interval-minutes", mig_options.run.defrag_interval_minutes,
                   "--mig: simulated minutes between defragmentation rounds")
      ->capture_default_str();
  replay
      ->add_option("--mean-lifetime-minutes", mig_options.run.mean_lifetime_minutes,
                   "--mig: simulated minutes a mean pod lifetime stands for (defrag budgets are "
                   "per hour)")
      ->capture_default_str();
  replay->add_option("--reference", replay_options.reference_csv,
                     "Published summary CSV to compare with (fgd_expected_summary.csv)");
  replay->add_flag("--no-bound", replay_options.skip_bound,
                   "Skip the LP upper bound on the allocation at 130% (docs/replay.md)");
  replay->add_option("--define-node-policy", replay_options.node_policy_definitions,
                     "NAME=PLUGIN:WEIGHT[,PLUGIN:WEIGHT...]: tessera under this node policy is the "
                     "policy tessera:NAME, for --policy (repeatable; docs/placement.md)");
  replay->add_option("--tie-break", replay_options.tie_break, "first (the paper) or uniform")
      ->check(CLI::IsMember({"first", "uniform"}));
  replay->callback([flags, nodes_option, pods_option, policy_option, seeds_option] {
    flags->seeds_given = seeds_option->count() > 0;
    flags->trace_inputs_given =
        nodes_option->count() > 0 && pods_option->count() > 0 && policy_option->count() > 0;
    EndCommand(RunReplayFlags(*flags));
  });
}

}  // namespace tessera::app
