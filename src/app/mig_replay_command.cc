#include "app/mig_replay_command.h"

#include <iostream>

#include "app/replay_command.h"
#include "sim/mig_replay/mig_replay.h"

namespace tessera::app {

int RunMigReplayCommand(const MigReplayOptions& o) {
  auto seeds = ParseSeeds(o.seeds);
  if (!seeds.ok()) return std::cerr << "tessera: " << seeds.error().message << "\n", 1;
  sim::mig_replay::MigReplayOptions r;
  r.fleets = o.fleets;
  r.workloads = o.workloads;
  r.policies = o.policies;
  r.seeds = std::move(seeds.value());
  r.trace_csv = o.trace_csv;
  r.nodes_per_fleet = o.nodes_per_fleet;
  r.loads = o.loads;
  r.stop_after_rejections = o.stop_after_rejections;
  r.skip_optimum = o.skip_optimum;
  r.skip_pending = o.skip_pending;
  r.out_dir = o.out_dir;
  r.jobs = o.jobs;
  const Status done = sim::mig_replay::ReplayMig(r);
  if (!done.ok()) return std::cerr << "tessera: " << done.message() << "\n", 1;
  return 0;
}

}  // namespace tessera::app
