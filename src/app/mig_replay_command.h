#pragma once

#include <string>
#include <vector>

#include "sim/mig_replay/mig_replay.h"

namespace tessera::app {

// `tessera replay --mig`'s flags: the run's options, and the seeds as typed ("42-46").
struct MigReplayOptions {
  sim::mig_replay::MigReplayOptions run;
  std::string seeds = "42-46";
  std::vector<std::string> node_policy_definitions;  // --define-node-policy
};

// Parses the seeds and hands the rest to sim::mig_replay::ReplayMig (docs/mig-replay.md).
int RunMigReplayCommand(const MigReplayOptions& options);

}  // namespace tessera::app
