// GET /ui/state (scheduler::UiStateEncoder) at 1000 nodes × 8 A100-40GB, every node full of the
// filter benchmark's pods (shared: 40 000 pods; MIG: 16 000 pods of two instances), 50 pods
// waiting. Three costs:
//   Fresh:   the whole body from nothing (the first poll; EncodeUiState).
//   Collect: what a poll does under the service's lock once `churn` pods have gone and come
//            back on as many nodes since the last poll (0: nothing changed).
//   Join:    the body from a snapshot, outside the lock (skipped while nothing changed).
// Reports the body size. Build and run: bench/CMakeLists.txt.

#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_cluster.h"
#include "core/config/scheduler_config.h"
#include "core/sched/scheduler.h"
#include "core/state/cluster_state.h"
#include "scheduler/ui_state.h"

namespace tessera {
namespace {

struct FullCluster {
  state::ClusterState state{config::SchedulerConfig{}};
  std::map<std::string, std::string> waiting;
  std::vector<std::string> first_pod_of_node;  // one pod per node, to churn
  int pods = 0;
};

std::unique_ptr<FullCluster> Build(Kind kind, int nodes) {
  auto c = std::make_unique<FullCluster>();
  sched::Scheduler scheduler(c->state, sched::PolicyDefaults{});
  for (int i = 0; i < nodes; ++i) c->state.UpsertNode(MakeNode(NodeName(i), kind));
  for (int i = 0; i < nodes; ++i) {
    const std::vector<std::string> only = {NodeName(i)};
    c->first_pod_of_node.push_back("bench/p" + std::to_string(c->pods));
    while (
        scheduler.Schedule(MakePod("p" + std::to_string(c->pods), kind), &only, kNow).scheduled()) {
      ++c->pods;
    }
  }
  for (int i = 0; i < 50; ++i) {
    c->waiting["bench/waiting-" + std::to_string(i)] =
        "0/1000 nodes are available: 1000 8/8 CardInsufficientMemory.";
  }
  return c;
}

void BM_UiStateFresh(benchmark::State& state, Kind kind) {
  auto c = Build(kind, static_cast<int>(state.range(0)));
  size_t bytes = 0;
  for (auto _ : state) {
    std::string body = scheduler::EncodeUiState(c->state, c->waiting);
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  state.counters["pods"] = c->pods;
  state.counters["kib"] = static_cast<double>(bytes) / 1024.0;
}

void BM_UiStateCollect(benchmark::State& state, Kind kind) {
  auto c = Build(kind, static_cast<int>(state.range(0)));
  const int churn = static_cast<int>(state.range(1));
  scheduler::UiStateEncoder encoder;
  (void)encoder.Collect(c->state, c->waiting);
  size_t next = 0;
  size_t encoded = 0;
  for (auto _ : state) {
    state.PauseTiming();
    for (int k = 0; k < churn; ++k) {  // a pod leaves and comes back: its node changed
      const std::string& key = c->first_pod_of_node[next++ % c->first_pod_of_node.size()];
      if (auto r = c->state.RemovePod(key)) c->state.AddPod(std::move(*r));
    }
    state.ResumeTiming();
    auto snap = encoder.Collect(c->state, c->waiting);
    encoded = encoder.last_encoded();
    benchmark::DoNotOptimize(snap);
  }
  state.counters["nodes_encoded"] = static_cast<double>(encoded);
}

void BM_UiStateJoin(benchmark::State& state, Kind kind) {
  auto c = Build(kind, static_cast<int>(state.range(0)));
  scheduler::UiStateEncoder encoder;
  const auto snap = encoder.Collect(c->state, c->waiting);
  for (auto _ : state) {
    std::string body = snap.Join();
    benchmark::DoNotOptimize(body);
  }
}

BENCHMARK_CAPTURE(BM_UiStateFresh, sharing, Kind::kSharing)
    ->Arg(1000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_UiStateFresh, mig, Kind::kMig)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_UiStateCollect, sharing, Kind::kSharing)
    ->Args({1000, 0})
    ->Args({1000, 10})
    ->Args({1000, 100})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_UiStateCollect, mig, Kind::kMig)
    ->Args({1000, 0})
    ->Args({1000, 10})
    ->Args({1000, 100})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_UiStateJoin, sharing, Kind::kSharing)
    ->Arg(1000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_UiStateJoin, mig, Kind::kMig)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera
