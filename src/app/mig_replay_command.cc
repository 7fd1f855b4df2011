#include "app/mig_replay_command.h"

#include "app/command_support.h"
#include "app/replay_command.h"
#include "core/sched/node_policy.h"

namespace tessera::app {

int RunMigReplayCommand(const MigReplayOptions& o) {
  auto seeds = ParseSeeds(o.seeds);
  if (!seeds.ok()) return PrintFailure(seeds.error().message);
  sim::mig_replay::MigReplayOptions run = o.run;
  run.seeds = std::move(seeds.value());
  auto node_policies = sched::ParseNodePolicyDefinitions(o.node_policy_definitions);
  if (!node_policies.ok()) {
    return PrintFailure("--define-node-policy: " + node_policies.error().message);
  }
  run.node_policies = std::move(node_policies.value());
  const Status done = sim::mig_replay::ReplayMig(run);
  if (!done.ok()) return PrintFailure(done.message());
  return 0;
}

}  // namespace tessera::app
