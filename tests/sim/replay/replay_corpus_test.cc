// The FGD trace replay's decisions, pinned: every policy (the paper's baselines and tessera, with
// and without the trace's demand mix) replays a synthetic trace on a synthetic cluster for two
// seeds and both tie-breaks; the placed and failed pods and the three metric series after every
// pod are hashed (they depend on which node and GPU every pod got). A reshaping of the replay
// framework must keep every hash (tests/sim/data/replay_corpus.txt).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "sim/golden_hashes.h"
#include "sim/replay/runner.h"
#include "sim/replay/seed_stats.h"
#include "sim/replay/tessera_policy.h"

namespace tessera::sim::replay {
namespace {

std::vector<TraceNode> Nodes() {
  std::vector<TraceNode> nodes;
  const char* models[] = {"T4", "P100", "V100M16", "G2"};
  for (int i = 0; i < 32; ++i) {
    const int gpus = i % 3 == 0 ? 8 : (i % 3 == 1 ? 4 : 2);
    nodes.push_back({"node-" + std::to_string(i), int64_t{gpus} * 8000, int64_t{gpus} * 32768, gpus,
                     models[i % 4]});
  }
  nodes.push_back({"cpu-only", 64000, 262144, 0, ""});
  return nodes;
}

std::vector<TracePod> Pods() {
  std::mt19937_64 rng(7);
  std::vector<TracePod> pods;
  for (int i = 0; i < 240; ++i) {
    TracePod pod;
    pod.name = "pod-" + std::to_string(i);
    pod.cpu_milli = 500 + 500 * static_cast<int64_t>(rng() % 12);
    pod.memory_mib = 1024 * static_cast<int64_t>(1 + rng() % 8);
    switch (rng() % 5) {
      case 0:
        break;  // CPU-only
      case 1:
      case 2:
        pod.num_gpu = 1;
        pod.gpu_milli = 100 + 50 * static_cast<int64_t>(rng() % 18);
        break;
      case 3:
        pod.num_gpu = 1;
        pod.gpu_milli = 1000;
        if (rng() % 3 == 0) pod.gpu_spec = {rng() % 2 == 0 ? "T4" : "V100M16"};
        break;
      default:
        pod.num_gpu = rng() % 2 == 0 ? 2 : 4;
        pod.gpu_milli = 1000;
    }
    pods.push_back(pod);
  }
  return pods;
}

std::string Describe(const SeedResult& run) {
  std::string out = std::to_string(run.scheduled);
  for (int64_t failed : run.failed_by_kind) out += "," + std::to_string(failed);
  for (const auto* series :
       {&run.series.gpu_alloc_pct, &run.series.frag_amount_pct, &run.series.frag_ratio_pct}) {
    out += "\n";
    for (double v : *series) out += FormatFixed(v, 6) + " ";
  }
  return out;
}

TEST(ReplayCorpusTest, EveryPolicyPlacesAsRecorded) {
  PolicyFactories extra;
  extra["tessera"] = [](const TargetWorkload&) { return MakeTesseraPolicy(); };
  extra["tessera-prior"] = [](const TargetWorkload& m) { return MakeTesseraPolicy(&m); };
  std::vector<std::string> policies = BuiltinPolicyNames();
  policies.emplace_back("tessera");
  policies.emplace_back("tessera-prior");
  std::map<std::string, uint64_t> hashes;
  int64_t scheduled = 0;
  for (const TieBreak tie_break : {TieBreak::kFirstInNodeOrder, TieBreak::kUniform}) {
    const std::string tie = tie_break == TieBreak::kUniform ? "uniform" : "first";
    for (const std::string& policy : policies) {
      auto runs = RunReplay(Nodes(), Pods(), policy, {1, 2}, 1.3, 1, &extra, {}, tie_break);
      ASSERT_TRUE(runs.ok()) << runs.error().message;
      for (const SeedResult& run : *runs) {
        scheduled += run.scheduled;
        hashes[policy + "/" + tie + "/seed-" + std::to_string(run.seed)] =
            testing::Fnv1a(Describe(run));
      }
    }
  }
  EXPECT_GT(scheduled, 0);
  testing::ExpectGoldenHashes(
      "replay_corpus.txt", hashes,
      "policy/tie-break/seed hash (tests/sim/replay/replay_corpus_test.cc)");
}

}  // namespace
}  // namespace tessera::sim::replay
