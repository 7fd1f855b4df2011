#include "sim/replay/tessera_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/sched/node_scoring.h"
#include "sim/replay/runner.h"

namespace tessera::sim::replay {
namespace {

// Trace models as the openb node list names them: none of them says "NVIDIA".
std::vector<TraceNode> TraceModelNodes() {
  std::vector<TraceNode> nodes;
  const char* models[] = {"T4", "P100", "V100M16", "G2"};
  for (int i = 0; i < 24; ++i) {
    const int gpus = i % 2 == 0 ? 8 : 2;
    nodes.push_back({"node-" + std::to_string(i), int64_t{gpus} * 12000, int64_t{gpus} * 65536,
                     gpus, models[i % 4]});
  }
  return nodes;
}

std::vector<TracePod> EveryKindOfPod() {
  std::mt19937_64 rng(11);
  std::vector<TracePod> pods;
  for (int i = 0; i < 100; ++i) {
    TracePod pod;
    pod.name = "pod-" + std::to_string(i);
    pod.cpu_milli = 1000 + 1000 * static_cast<int64_t>(rng() % 6);
    pod.memory_mib = 2048;
    switch (i % 4) {
      case 0:
        break;  // CPU-only
      case 1:
        pod.num_gpu = 1;
        pod.gpu_milli = 250 + 250 * static_cast<int64_t>(rng() % 3);
        break;
      case 2:
        pod.num_gpu = 1;
        pod.gpu_milli = 1000;
        pod.gpu_spec = {rng() % 2 == 0 ? "T4" : "V100M16"};
        break;
      default:
        pod.num_gpu = 2;
        pod.gpu_milli = 1000;
    }
    pods.push_back(pod);
  }
  return pods;
}

// tessera schedules into the replayed cluster's own PlacementState (no copy of its own), and the
// free resources the baselines read follow what its scheduler reserved there.
TEST(TesseraReplayPolicy, ReservesInTheClusterItPlacesInto) {
  ReplayCluster cluster(TraceModelNodes());
  auto policy = MakeTesseraPolicy();
  std::mt19937_64 rng(1);
  const std::vector<TracePod> pods = EveryKindOfPod();
  for (size_t i = 0; i < 12; ++i) {
    const std::string key = TraceArrivalKey(i);
    Result<PlaceOutcome> placed = policy->Place(cluster, pods[i], key, rng);
    ASSERT_TRUE(placed.ok()) << placed.error().message;
    ASSERT_EQ(*placed, PlaceOutcome::kPlaced) << pods[i].name;
    const std::optional<Choice> where = cluster.PlacementOf(key);
    ASSERT_TRUE(where) << key;
    EXPECT_EQ(static_cast<int>(where->gpus.size()), pods[i].num_gpu) << key;
  }
  const state::ClusterState& state = cluster.placement_state().state();
  int64_t used_mem = 0;
  for (int n = 0; n < cluster.node_count(); ++n) {
    const state::NodeState& node = *state.node(StateNodeName(n));
    EXPECT_EQ(node.cpu_used_milli, cluster.CpuCapacity(n) - cluster.CpuFree(n)) << n;
    for (int g = 0; g < cluster.GpuCount(n); ++g) {
      EXPECT_EQ(node.usage[g].used_mem, kMibPerGpu - cluster.GpuFree(n)[g]) << n << "/" << g;
      used_mem += node.usage[g].used_mem;
    }
  }
  EXPECT_EQ(used_mem, cluster.allocated_gpu_milli());
  EXPECT_GT(used_mem, 0);
}

TEST(TesseraReplayPolicy, PlacesPodsOfEveryKindOnTraceModels) {
  // The cluster has room for every pod: at tune 0 (no inflation) nothing may fail.
  PolicyFactories extra;
  extra["tessera"] = [](const TargetWorkload&) { return MakeTesseraPolicy(); };
  auto runs = RunReplay(TraceModelNodes(), EveryKindOfPod(), "tessera", {1}, 0, 1, &extra);
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  const SeedResult& run = runs->front();
  EXPECT_EQ(run.scheduled, run.pods);
  for (int64_t failed : run.failed_by_kind) EXPECT_EQ(failed, 0);
}

TEST(TesseraReplayPolicy, HonoursTheModelAPodAccepts) {
  // Three one-GPU V100M16 pods on a cluster with two V100M16 GPUs: one must fail, although
  // T4 GPUs are free.
  const std::vector<TraceNode> nodes = {{"a", 64000, 262144, 2, "T4"},
                                        {"b", 64000, 262144, 2, "V100M16"}};
  std::vector<TracePod> pods;
  for (int i = 0; i < 3; ++i) {
    TracePod pod;
    pod.name = "p" + std::to_string(i);
    pod.cpu_milli = 1000;
    pod.memory_mib = 1024;
    pod.num_gpu = 1;
    pod.gpu_milli = 1000;
    pod.gpu_spec = {"V100M16"};
    pods.push_back(pod);
  }
  PolicyFactories extra;
  extra["tessera"] = [](const TargetWorkload&) { return MakeTesseraPolicy(); };
  auto runs = RunReplay(nodes, pods, "tessera", {1}, 0, 1, &extra);
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  EXPECT_EQ(runs->front().scheduled, 2);
  EXPECT_EQ(runs->front().failed_by_kind[static_cast<int>(PodKind::kOneGpu)], 1);
}

// tessera under an operator's node policy is the replay policy "tessera:NAME". Restating
// tessera's own (fragmentation alone, weight 3) replays exactly as `tessera`; HAMi's spread node
// score places otherwise.
TEST(TesseraReplayPolicy, RunsUnderAnOperatorsNodePolicy) {
  const sched::NodePolicy frag = sched::ParseNodePolicyDefinition("frag=fragmentation:3").value();
  const sched::NodePolicy spread =
      sched::ParseNodePolicyDefinition("unpack=hami-node-score:-1").value();
  EXPECT_EQ(MakeTesseraPolicy(nullptr, frag)->Name(), "tessera:frag");
  EXPECT_EQ(MakeTesseraPolicy()->Name(), "tessera");
  PolicyFactories extra;
  extra["tessera"] = [](const TargetWorkload&) { return MakeTesseraPolicy(); };
  for (const sched::NodePolicy& p : {frag, spread}) {
    extra[TesseraPolicyName(p)] = [p](const TargetWorkload&) {
      return MakeTesseraPolicy(nullptr, p);
    };
  }
  // Inflated to 1.3 times the GPUs, so that the choices matter.
  auto run = [&](const std::string& policy) {
    auto runs = RunReplay(TraceModelNodes(), EveryKindOfPod(), policy, {1, 2}, 1.3, 1, &extra);
    EXPECT_TRUE(runs.ok()) << runs.error().message;
    std::vector<std::vector<double>> series;
    for (const SeedResult& r : runs.value()) series.push_back(r.series.gpu_alloc_pct);
    return series;
  };
  const auto tessera = run("tessera");
  EXPECT_EQ(run("tessera:frag"), tessera);
  EXPECT_NE(run("tessera:unpack"), tessera);
}

// tessera-prior seeds the demand mix with the trace's whole distribution, and the mix's own cut
// (the most frequent shapes up to 95% of the mass) is then FGD's target workload: the same
// shapes with the same probabilities. Seeded with FGD's target instead, the mix would cut again.
TEST(TesseraReplayPolicy, APriorOfTheWholeDistributionMakesTheMixFgdsTarget) {
  // Ten shapes, no two as frequent (FGD and the mix order equal counts differently).
  const int counts[] = {30, 20, 12, 9, 7, 5, 4, 3, 2, 1};
  std::vector<TracePod> pods;
  for (int k = 0; k < 10; ++k) {
    TracePod pod{"s" + std::to_string(k), 1000 + 500 * k, 1024, k % 3, 0, {}};
    if (pod.num_gpu > 0) pod.gpu_milli = k % 3 == 1 ? 100 * (k + 1) : 1000;
    if (k == 4) pod.gpu_spec = {"T4"};
    pods.insert(pods.end(), counts[k], pod);
  }
  const TargetWorkload target = BuildTargetWorkload(pods);
  ASSERT_EQ(target.shapes.size(), 8U);  // 30 + ... + 3 = 90 >= 95% of 93
  ASSERT_EQ(target.distribution.size(), 10U);
  sched::DemandMix mix(1.0);
  for (const TargetShape& t : target.distribution) {
    mix.Observe(DemandShapeOf(t.shape), static_cast<double>(t.count));
  }
  std::map<sched::DemandShape, double> expected;
  for (const TargetShape& t : target.shapes) expected[DemandShapeOf(t.shape)] = t.probability;
  std::map<sched::DemandShape, double> learned;
  for (const sched::WeightedShape& w : mix.Target()) learned[w.shape] = w.weight;
  ASSERT_EQ(learned.size(), expected.size());
  for (const auto& [shape, probability] : expected) {
    ASSERT_TRUE(learned.count(shape)) << shape.gpus << " GPU x " << shape.gpu_mem_mib;
    EXPECT_NEAR(learned[shape], probability, 1e-12);
  }

  sched::DemandMix twice(1.0);
  for (const TargetShape& t : target.shapes) {
    twice.Observe(DemandShapeOf(t.shape), static_cast<double>(t.count));
  }
  EXPECT_LT(twice.Target().size(), expected.size());
}

// The two fragmentation measures agree on every replayed node: tessera's core measure
// (NodeFragmentation, in GPUs, on the node as its register annotation and reservations describe
// it) and the port of the FGD simulator's (FragCalculator, in milli-GPU, on the trace node), for
// the trace's target workload in the demand shapes the tessera policy records. Checked after
// every pod of a replay past saturation, so nodes are seen empty, part used, out of CPU and
// full, with shapes of one and several GPUs, CPU-only shapes and shapes that name a model.
TEST(TesseraReplayPolicy, CoreFragmentationEqualsTheFgdPortsOnReplayedNodes) {
  std::vector<TraceNode> nodes = TraceModelNodes();
  nodes.push_back({"cpu-only", 32000, 131072, 0, ""});
  std::vector<TracePod> pods = EveryKindOfPod();
  std::mt19937_64 shuffle(5);
  for (int round = 0; round < 3; ++round) {
    std::vector<TracePod> more = EveryKindOfPod();
    std::shuffle(more.begin(), more.end(), shuffle);
    pods.insert(pods.end(), more.begin(), more.end());
  }
  const TargetWorkload target = BuildTargetWorkload(EveryKindOfPod());
  ASSERT_GT(target.shapes.size(), 5U);
  std::vector<sched::WeightedShape> shapes;
  for (const TargetShape& t : target.shapes) {
    shapes.push_back({DemandShapeOf(t.shape), t.probability});
  }
  const sched::PreparedTarget prepared(shapes);

  ReplayCluster cluster(nodes);
  const FragCalculator port(target, cluster.model_names());
  Result<std::unique_ptr<Policy>> fgd = MakePolicy("fgd", target);
  ASSERT_TRUE(fgd.ok()) << fgd.error().message;
  std::mt19937_64 rng(3);
  int placed = 0;
  int refused = 0;
  int compared_in_use = 0;
  for (size_t i = 0; i < pods.size(); ++i) {
    Result<PlaceOutcome> outcome = (*fgd)->Place(cluster, pods[i], TraceArrivalKey(i), rng);
    ASSERT_TRUE(outcome.ok()) << outcome.error().message;
    (*outcome == PlaceOutcome::kPlaced ? placed : refused) += 1;
    for (int n = 0; n < cluster.node_count(); ++n) {
      const state::NodeState& node = *cluster.placement_state().nodes()[n];
      const double core = sched::NodeFragmentation(sched::CapacityOf(node), prepared);
      const double expected = port.NodeFrag(cluster, n);
      ASSERT_NEAR(core * kMibPerGpu, expected, 1e-6 * std::max(1.0, expected))
          << "node " << cluster.NodeName(n) << " after pod " << i;
      compared_in_use += node.cpu_used_milli > 0 ? 1 : 0;
    }
  }
  // Past saturation: pods were refused, and most comparisons saw nodes in use.
  EXPECT_GT(placed, 100);
  EXPECT_GT(refused, 0);
  EXPECT_GT(compared_in_use, placed * cluster.node_count() / 2);
}

}  // namespace
}  // namespace tessera::sim::replay
