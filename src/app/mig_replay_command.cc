#include "app/mig_replay_command.h"

#include <iostream>

#include "app/replay_command.h"

namespace tessera::app {

int RunMigReplayCommand(const MigReplayOptions& o) {
  auto seeds = ParseSeeds(o.seeds);
  if (!seeds.ok()) return std::cerr << "tessera: " << seeds.error().message << "\n", 1;
  sim::mig_replay::MigReplayOptions run = o.run;
  run.seeds = std::move(seeds.value());
  const Status done = sim::mig_replay::ReplayMig(run);
  if (!done.ok()) return std::cerr << "tessera: " << done.message() << "\n", 1;
  return 0;
}

}  // namespace tessera::app
