// The decisions of the scheduling core, pinned: a fixed set of random clusters and pod sequences
// (sharing and MIG GPUs of several models, unhealthy and cordoned GPUs, init containers, type and
// UUID filters, every node and GPU policy, NUMA binding, quotas, deletes and retries) runs
// through the simulator, and every step's JSON (decision, annotations, message, per-node
// reasons) is hashed per scenario. The hashes recorded in tests/sim/data/decision_corpus.txt are
// the decisions of the code as it was when they were recorded: a reshaping of the core must keep
// every one (issue 11's differential test). A change that is meant to alter decisions records
// new hashes with TESSERA_UPDATE_GOLDEN=1 and says why in its commit; TESSERA_DUMP_SCENARIO=<n>
// prints scenario n's steps, to diff the outputs of two builds.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "adapters/threads/thread_pool.h"
#include "core/mig/catalog.h"
#include "core/model/annotations.h"
#include "core/sched/preemption.h"
#include "sim/golden_hashes.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace tessera::sim {
namespace {

using codec::Json;

constexpr int kScenarios = 240;

// std::mt19937_64's sequence is fixed by the standard; the distributions are not, so values are
// mapped from the raw output here.
class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  int Below(int n) { return static_cast<int>(engine_() % static_cast<uint64_t>(n)); }
  bool Chance(int percent) { return Below(100) < percent; }
  template <class T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Below(static_cast<int>(v.size())))];
  }

 private:
  std::mt19937_64 engine_;
};

const mig::GpuModelCatalog& Catalog() {
  static const mig::GpuModelCatalog catalog = mig::GpuModelCatalog::Builtin().value();
  return catalog;
}

std::string Uuid(int node, int gpu) {
  return "GPU-" + std::to_string(node) + "-" + std::to_string(gpu);
}

// Two draws in one argument list come in the compiler's order (GCC's right to left, clang's
// left to right), which made the corpus depend on it: the GPU is drawn first, as GCC did when
// the corpus was recorded.
std::string RandomUuid(Random& r, int nodes) {
  const int gpu = r.Below(4);
  const int node = r.Below(nodes);
  return Uuid(node, gpu);
}

Json RandomGpu(Random& r, int node, int gpu) {
  Json g;
  if (r.Chance(40)) {
    g["model"] = r.Pick(std::vector<std::string>{"A100-40GB", "H100-SXM5-80GB", "H200-141GB",
                                                 "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                                                 "A30-24GB"});
    g["mode"] = "mig";
  } else {
    g["model"] = r.Pick(std::vector<std::string>{"Tesla T4", "NVIDIA A10", "A100-80GB"});
    if (g["model"] != "A100-80GB") g["memoryMiB"] = r.Pick(std::vector<int>{8000, 16000, 24576});
    g["count"] = r.Pick(std::vector<int>{2, 4, 10});
    g["numa"] = gpu % 2;
  }
  g["uuid"] = Uuid(node, gpu);
  if (r.Chance(8)) g["health"] = false;
  return g;
}

model::Container RandomContainer(Random& r, const std::string& name) {
  model::Container c;
  c.name = name;
  if (r.Chance(10)) {
    c.limits["cpu"] = "1";  // no GPU
    return c;
  }
  c.limits["nvidia.com/gpu"] = std::to_string(1 + r.Below(r.Chance(80) ? 2 : 4));
  if (r.Chance(15)) {
    c.limits["nvidia.com/gpumem-percentage"] =
        std::to_string(r.Pick(std::vector<int>{25, 50, 100}));
  } else if (r.Chance(85)) {
    c.limits["nvidia.com/gpumem"] =
        std::to_string(r.Pick(std::vector<int>{1000, 3000, 4000, 8000, 10000, 20000, 40000}));
  }
  if (r.Chance(40))
    c.limits["nvidia.com/gpucores"] = std::to_string(r.Pick(std::vector<int>{0, 10, 30, 50, 100}));
  if (r.Chance(20)) c.requests["cpu"] = std::to_string(1 + r.Below(8));
  return c;
}

model::Pod RandomPod(Random& r, int index, int nodes) {
  model::Pod p;
  p.ns = r.Chance(30) ? "team" : "default";
  p.name = "p" + std::to_string(index);
  p.uid = "uid-" + std::to_string(index);
  if (r.Chance(15)) p.init_containers.push_back(RandomContainer(r, "init"));
  const int containers = 1 + (r.Chance(20) ? 1 : 0);
  for (int i = 0; i < containers; ++i) {
    p.containers.push_back(RandomContainer(r, "c" + std::to_string(i)));
  }
  auto& a = p.annotations;
  namespace ann = model::annotations;
  if (r.Chance(20))
    a[std::string(ann::kVgpuMode)] = r.Pick(std::vector<std::string>{"mig", "hami-core"});
  if (r.Chance(10))
    a[std::string(ann::kUseGpuType)] = r.Pick(std::vector<std::string>{"A100", "T4", "H100,RTX"});
  if (r.Chance(8))
    a[std::string(ann::kNoUseGpuType)] = r.Pick(std::vector<std::string>{"A10", "A30"});
  if (r.Chance(6)) a[std::string(ann::kUseGpuUuid)] = RandomUuid(r, nodes);
  if (r.Chance(6)) a[std::string(ann::kNoUseGpuUuid)] = RandomUuid(r, nodes);
  if (r.Chance(8)) a[std::string(ann::kNumaBind)] = "true";
  if (r.Chance(25))
    a[std::string(ann::kNodePolicy)] =
        r.Pick(std::vector<std::string>{"tessera", "binpack", "spread"});
  if (r.Chance(25)) {
    a[std::string(ann::kGpuPolicy)] = r.Pick(std::vector<std::string>{
        "tessera", "tessera,binpack", "binpack", "spread", "topology-aware", "mutex", "numa"});
  }
  return p;
}

Scenario RandomScenario(int index) {
  Random r(0x7e55e7a000000000ULL + static_cast<uint64_t>(index));
  Scenario sc;
  sc.policy.node = r.Pick(std::vector<sched::NodePolicy>{
      sched::NodePolicy::Tessera(), sched::NodePolicy::Binpack(), sched::NodePolicy::Spread()});
  sc.policy.gpu =
      r.Pick(std::vector<std::string>{"tessera", "tessera,binpack", "spread", "binpack"});
  const int nodes = 1 + r.Below(6);
  for (int n = 0; n < nodes; ++n) {
    Json spec{{"name", "n" + std::to_string(n)}, {"gpus", Json::array()}};
    const int gpus = 1 + r.Below(4);
    for (int g = 0; g < gpus; ++g) spec["gpus"].push_back(RandomGpu(r, n, g));
    if (r.Chance(10)) spec["annotations"] = {{"hami.io/device-cordon", Uuid(n, 0)}};
    auto node = ShorthandNode(spec, Catalog(), sc.config.nvidia, "node");
    EXPECT_TRUE(node.ok()) << node.error().message;
    if (node.ok()) sc.nodes.push_back(std::move(node.value()));
  }
  if (r.Chance(30)) {
    sc.quotas.push_back(
        {"team",
         "gpu",
         {{"limits.nvidia.com/gpumem", std::to_string(20000 + 10000 * r.Below(6))}}});
  }
  std::vector<std::string> created;
  const int steps = 12 + r.Below(20);
  for (int s = 0; s < steps; ++s) {
    ScenarioStep step;
    if (!created.empty() && r.Chance(30)) {
      step.kind = ScenarioStep::Kind::kDelete;
      step.pod_key = r.Pick(created);
    } else {
      step.pod = RandomPod(r, s, nodes);
      created.push_back(step.pod.Key());
    }
    sc.steps.push_back(std::move(step));
  }
  return sc;
}

using testing::Fnv1a;

std::string RunScenario(int index, bool equivalence_cache = true, TaskRunner* runner = nullptr,
                        bool rank_bound = true, const std::function<void(Scenario&)>& edit = {}) {
  Scenario scenario = RandomScenario(index);
  if (edit) edit(scenario);
  Simulator sim(std::move(scenario));
  sim.scheduler().set_equivalence_cache(equivalence_cache);
  sim.scheduler().set_rank_bound(rank_bound);
  // One node per thread at least: the corpus's clusters are small, and every decision should
  // take the parallel path.
  sim.scheduler().set_filter_runner(runner, /*min_nodes_per_thread=*/1);
  std::string out;
  for (const auto& r : sim.RunAll()) out += StepJson(r) + "\n";
  out += FinalJson(sim.state()) + "\n";
  return out;
}

std::string CorpusPath() {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/sim/data/decision_corpus.txt";
}

TEST(DecisionCorpusTest, EveryRecordedDecisionIsUnchanged) {
  if (const char* dump = std::getenv("TESSERA_DUMP_SCENARIO")) {
    std::cout << RunScenario(std::atoi(dump));
    GTEST_SKIP() << "dumped scenario " << dump;
  }
  std::vector<uint64_t> hashes;
  int scheduled = 0, pending = 0;
  for (int i = 0; i < kScenarios; ++i) {
    const std::string out = RunScenario(i);
    hashes.push_back(Fnv1a(out));
    for (size_t pos = out.find("\"scheduled\":"); pos != std::string::npos;
         pos = out.find("\"scheduled\":", pos + 1)) {
      (out.compare(pos + 12, 4, "true") == 0 ? scheduled : pending)++;
    }
  }
  // The corpus must exercise both outcomes (a generator that only produced failures, or only
  // successes, would pin little).
  EXPECT_GT(scheduled, kScenarios * 3);
  EXPECT_GT(pending, kScenarios * 2);
  if (std::getenv("TESSERA_UPDATE_GOLDEN") != nullptr) {
    std::ofstream f(CorpusPath());
    f << "# scenario hash (tests/sim/decision_corpus_test.cc); " << scheduled << " placed, "
      << pending << " pending\n";
    for (int i = 0; i < kScenarios; ++i) f << i << " " << std::hex << hashes[i] << std::dec << "\n";
    GTEST_SKIP() << "recorded " << CorpusPath();
  }
  std::ifstream in(CorpusPath());
  ASSERT_TRUE(in) << "missing " << CorpusPath() << " (record it with TESSERA_UPDATE_GOLDEN=1)";
  std::map<int, uint64_t> recorded;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    int index = 0;
    uint64_t hash = 0;
    ls >> index >> std::hex >> hash;
    recorded[index] = hash;
  }
  ASSERT_EQ(recorded.size(), static_cast<size_t>(kScenarios));
  int changed = 0;
  for (int i = 0; i < kScenarios; ++i) {
    if (recorded[i] == hashes[i]) continue;
    if (++changed <= 5) {
      ADD_FAILURE() << "scenario " << i << " decides differently (TESSERA_DUMP_SCENARIO=" << i
                    << " prints it; compare with the build that recorded the corpus)";
    }
  }
  EXPECT_EQ(changed, 0) << changed << " of " << kScenarios << " scenarios changed";
}

// The generator itself is deterministic (else the corpus would pin nothing).
TEST(DecisionCorpusTest, ScenariosAreReproducible) {
  EXPECT_EQ(RunScenario(7), RunScenario(7));
  EXPECT_NE(RunScenario(7), RunScenario(8));
}

// The equivalence cache shares one node's evaluation with every node in the same state (and,
// for a pod naming GPU UUIDs, with those whose GPUs it does not name): evaluating every node on
// its own must decide exactly the same, step by step.
TEST(DecisionCorpusTest, TheEquivalenceCacheChangesNoDecision) {
  int differ = 0;
  for (int i = 0; i < kScenarios; ++i) {
    const std::string cached = RunScenario(i);
    const std::string alone = RunScenario(i, /*equivalence_cache=*/false);
    if (cached == alone) continue;
    ++differ;
    ADD_FAILURE() << "scenario " << i
                  << " decides differently without the equivalence cache (diff the two with "
                     "TESSERA_DUMP_SCENARIO="
                  << i << ")";
  }
  EXPECT_EQ(differ, 0);
}

// The rank bound skips nodes that cannot rank first without fitting the pod on them: fitting
// every node must decide exactly the same, with the equivalence cache and without, and on three
// threads (each share bounds by its own best). Every fourth scenario (the corpus itself runs
// with the bound on, and these runs are repeated under both sanitizers in CI).
TEST(DecisionCorpusTest, TheRankBoundChangesNoDecision) {
  threads::ThreadPool pool(3);
  int differ = 0;
  for (int i = 0; i < kScenarios; i += 4) {
    const std::string every_node = RunScenario(i, true, nullptr, /*rank_bound=*/false);
    const struct {
      bool cache;
      TaskRunner* runner;
      const char* name;
    } runs[] = {{true, nullptr, "one thread"},
                {false, nullptr, "equivalence cache off"},
                {true, &pool, "3 threads"}};
    for (const auto& run : runs) {
      if (RunScenario(i, run.cache, run.runner) == every_node) continue;
      ++differ;
      ADD_FAILURE() << "scenario " << i << " decides differently with the rank bound (" << run.name
                    << ")";
    }
  }
  EXPECT_EQ(differ, 0);
}

// A node policy an operator defines as a list of plugins with weights decides exactly like the
// built-in policy it restates (the built-ins are such lists): HAMi's binpack and spread are
// hami-node-score with a positive and a negative weight, tessera is fragmentation alone, whose
// weight's size changes no order and keeps the rank bounds on. The scenario's default and every
// pod's annotation name the defined policy instead. Every third scenario.
TEST(DecisionCorpusTest, DefinedPoliciesThatRestateTheBuiltInsDecideAlike) {
  const std::map<std::string, std::string> restated = {{"binpack", "pack=hami-node-score:2"},
                                                       {"spread", "unpack=hami-node-score:-0.5"},
                                                       {"tessera", "frag=fragmentation:4"}};
  const auto name_of = [](const std::string& definition) {
    return definition.substr(0, definition.find('='));
  };
  int differ = 0;
  int restated_annotations = 0;
  const auto restate = [&](Scenario& sc) {
    for (const auto& [builtin, definition] : restated) {
      sc.policy.defined_node_policies.push_back(
          sched::ParseNodePolicyDefinition(definition).value());
    }
    sc.policy.node = sched::ParseNodePolicy(name_of(restated.at(sc.policy.node.name())),
                                            sc.policy.defined_node_policies)
                         .value();
    for (ScenarioStep& step : sc.steps) {
      auto it = step.pod.annotations.find(std::string(model::annotations::kNodePolicy));
      if (it == step.pod.annotations.end()) continue;
      it->second = name_of(restated.at(it->second));
      ++restated_annotations;
    }
  };
  for (int i = 0; i < kScenarios; i += 3) {
    const std::string by_definition = RunScenario(i, true, nullptr, true, restate);
    if (by_definition == RunScenario(i)) continue;
    ++differ;
    ADD_FAILURE() << "scenario " << i << " decides differently under the restated policies";
  }
  EXPECT_EQ(differ, 0);
  EXPECT_GT(restated_annotations, 0);  // pods did name policies
}

// The victims preemption chooses, pinned like the decisions: in each scenario's final state,
// every pod left pending asks for room on every node at priority 10, against running pods given
// priorities 0, 5 or 10 and a tier label by a hash of their names, with one
// PodDisruptionBudget per namespace over tier "a". Each node's verdict, victims, cost and whether
// the search was exhaustive is hashed per scenario (tests/sim/data/preemption_corpus.txt).
std::string PreemptionOutcomes(int index, std::map<std::string, int>* verdicts) {
  Scenario scenario = RandomScenario(index);
  const sched::PolicyDefaults policy = scenario.policy;
  Simulator sim(std::move(scenario));
  sim.RunAll();
  const std::vector<model::DisruptionBudget> budgets = {
      {.ns = "default", .match_labels = {{"tier", "a"}}, .disruptions_allowed = index % 2},
      {.ns = "team", .match_labels = {{"tier", "a"}}, .disruptions_allowed = 0}};
  // Small limits, so that the corpus also pins the reprieve pass.
  const sched::PreemptionLimits limits{.max_victims = 3, .max_evaluations = 200};
  std::string out;
  for (const model::Pod& pending : sim.pending()) {
    model::Pod pod = pending;
    pod.priority = 10;
    for (const state::NodeState* node : sim.state().node_list()) {
      state::ClusterState copy = sim.state().Subset({node->name});
      for (const std::string& key : node->pods) {
        std::optional<state::PodReservation> r = copy.RemovePod(key);
        if (!r) continue;
        const uint64_t h = Fnv1a(key);
        r->uid = "uid-" + key;
        r->priority = static_cast<int32_t>(h % 3) * 5;
        r->labels = {{"tier", (h >> 8) % 2 == 0 ? "a" : "b"}};
        copy.AddPod(std::move(*r));
      }
      const sched::NodeVictims v =
          sched::FindVictims(std::move(copy), pod, policy, budgets, {}, limits);
      ++(*verdicts)[std::to_string(static_cast<int>(v.verdict))];
      out += pod.Key() + " " + node->name + " " + std::to_string(static_cast<int>(v.verdict));
      if (v.victims) {
        for (const std::string& victim : v.victims->pods) out += " " + victim;
        const sched::VictimSetCost& c = v.victims->cost;
        out += " pdb=" + std::to_string(c.pdb_violations) +
               " top=" + std::to_string(c.highest_priority) +
               " sum=" + std::to_string(c.priority_sum) + " mem=" + std::to_string(c.freed_mem);
      }
      out += std::string(v.exhaustive ? " exhaustive" : " reprieve") +
             " evaluations=" + std::to_string(v.evaluations) + "\n";
    }
  }
  return out;
}

TEST(DecisionCorpusTest, EveryRecordedPreemptionIsUnchanged) {
  std::map<std::string, uint64_t> hashes;
  std::map<std::string, int> verdicts;
  int reprieved = 0;
  for (int i = 0; i < kScenarios; ++i) {
    const std::string out = PreemptionOutcomes(i, &verdicts);
    for (size_t pos = out.find(" reprieve "); pos != std::string::npos;
         pos = out.find(" reprieve ", pos + 1)) {
      ++reprieved;
    }
    hashes["scenario-" + std::to_string(i)] = Fnv1a(out);
  }
  // The corpus must reach victims found, no set and the reprieve pass, or it pins little of the
  // search (a pod left pending fits no node as it is, so kFitsNow does not arise).
  using Verdict = sched::NodeVictims::Verdict;
  EXPECT_GT(verdicts[std::to_string(static_cast<int>(Verdict::kVictims))], kScenarios);
  EXPECT_GT(verdicts[std::to_string(static_cast<int>(Verdict::kNoSet))], kScenarios);
  EXPECT_GT(reprieved, 10);
  std::string header = "preemption outcomes per scenario (tests/sim/decision_corpus_test.cc):";
  for (const auto& [verdict, n] : verdicts)
    header += " verdict " + verdict + " x" + std::to_string(n);
  header += ", reprieve x" + std::to_string(reprieved);
  testing::ExpectGoldenHashes("preemption_corpus.txt", hashes, header);
}

// The parallel filter splits the nodes among threads, each with its own cycle state and
// equivalence cache, and chooses in the nodes' order: the same decisions as one thread, with the
// cache and without.
TEST(DecisionCorpusTest, TheParallelFilterChangesNoDecision) {
  threads::ThreadPool pool(3);
  int differ = 0;
  for (int i = 0; i < kScenarios; ++i) {
    const std::string serial = RunScenario(i);
    for (bool cache : {true, false}) {
      if (RunScenario(i, cache, &pool) == serial) continue;
      ++differ;
      ADD_FAILURE() << "scenario " << i << " decides differently on 3 threads"
                    << (cache ? "" : " without the equivalence cache");
    }
  }
  EXPECT_EQ(differ, 0);
}

}  // namespace
}  // namespace tessera::sim
