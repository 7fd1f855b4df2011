// Registering nodes one by one into an empty ClusterState (what `tessera serve` does when it
// first lists the cluster's nodes, and the simulator when it loads a cluster): the nodes'
// registration annotations are decoded, spec ids and state classes assigned, and the name-ordered
// node list kept current. The model::Node objects are built before the timed loop.
//
// BM_UpdateNodes: every registered node updated once more with only its handshake annotation
// changed (what HAMi's device plugin writes every 30 s, and every kubelet status update looks
// like): the registration itself is the same text.
//
// Arguments: nodes 1000, 5000 (8 GPUs each), shared (hami-core) or MIG.

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench_cluster.h"
#include "core/config/scheduler_config.h"
#include "core/model/annotations.h"
#include "core/state/cluster_state.h"

namespace tessera {
namespace {

void BM_RegisterNodes(benchmark::State& state, Kind kind) {
  const int count = static_cast<int>(state.range(0));
  std::vector<model::Node> nodes;
  nodes.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) nodes.push_back(MakeNode(NodeName(i), kind));
  for (auto _ : state) {
    state::ClusterState cluster{config::SchedulerConfig{}};
    for (const model::Node& node : nodes) cluster.UpsertNode(node);
    benchmark::DoNotOptimize(cluster.node_list().size());
  }
  state.SetItemsProcessed(state.iterations() * count);
}

void BM_UpdateNodes(benchmark::State& state, Kind kind) {
  const int count = static_cast<int>(state.range(0));
  std::vector<model::Node> nodes;
  nodes.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) nodes.push_back(MakeNode(NodeName(i), kind));
  state::ClusterState cluster{config::SchedulerConfig{}};
  for (const model::Node& node : nodes) cluster.UpsertNode(node);
  int64_t round = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ++round;
    for (model::Node& node : nodes) {
      node.annotations[std::string(model::annotations::kNodeHandshake)] =
          "Reported " + std::to_string(round);
    }
    state.ResumeTiming();
    for (const model::Node& node : nodes) cluster.UpsertNode(node);
    benchmark::DoNotOptimize(cluster.node_list().size());
  }
  state.SetItemsProcessed(state.iterations() * count);
}

BENCHMARK_CAPTURE(BM_RegisterNodes, sharing, Kind::kSharing)
    ->ArgNames({"nodes"})
    ->Arg(1000)
    ->Arg(5000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RegisterNodes, mig, Kind::kMig)
    ->ArgNames({"nodes"})
    ->Arg(1000)
    ->Arg(5000)
    ->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(BM_UpdateNodes, sharing, Kind::kSharing)
    ->ArgNames({"nodes"})
    ->Arg(5000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_UpdateNodes, mig, Kind::kMig)
    ->ArgNames({"nodes"})
    ->Arg(5000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera
