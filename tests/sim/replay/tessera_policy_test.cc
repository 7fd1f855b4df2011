#include "sim/replay/tessera_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace tessera::sim::replay
