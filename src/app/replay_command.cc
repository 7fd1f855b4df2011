#include "app/replay_command.h"

#include <iostream>

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
  if (!seeds.ok()) return std::cerr << "tessera: " << seeds.error().message << "\n", 1;
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
    return std::cerr << "tessera: --define-node-policy: " << node_policies.error().message << "\n",
           1;
  }
  r.node_policies = std::move(node_policies.value());
  const Status done = sim::replay::ReplayTraces(r);
  if (!done.ok()) return std::cerr << "tessera: " << done.message() << "\n", 1;
  return 0;
}

}  // namespace tessera::app
