// GET /ui/state (service::EncodeUiState) at 1000 nodes × 8 A100-40GB, every node full of the
// filter benchmark's pods (shared: 40 000 pods; MIG: 16 000 pods of two instances). Reports the
// body size. Build and run: bench/CMakeLists.txt.

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

#include "bench_cluster.h"
#include "core/config/scheduler_config.h"
#include "core/sched/scheduler.h"
#include "core/state/cluster_state.h"
#include "service/ui_state.h"

namespace tessera {
namespace {

void BM_UiState(benchmark::State& state, Kind kind) {
  state::ClusterState cluster{config::SchedulerConfig{}};
  sched::Scheduler scheduler(cluster, sched::PolicyDefaults{});
  const int nodes = static_cast<int>(state.range(0));
  for (int i = 0; i < nodes; ++i) cluster.UpsertNode(MakeNode(NodeName(i), kind));
  int pods = 0;
  for (int i = 0; i < nodes; ++i) {
    const std::vector<std::string> only = {NodeName(i)};
    while (scheduler.Schedule(MakePod("p" + std::to_string(pods), kind), &only, kNow).scheduled) {
      ++pods;
    }
  }
  std::map<std::string, std::string> waiting;
  for (int i = 0; i < 50; ++i) {
    waiting["bench/waiting-" + std::to_string(i)] =
        "0/1000 nodes are available: 1000 8/8 CardInsufficientMemory.";
  }
  size_t bytes = 0;
  for (auto _ : state) {
    std::string body = service::EncodeUiState(cluster, waiting);
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  state.counters["pods"] = pods;
  state.counters["kib"] = static_cast<double>(bytes) / 1024.0;
}

BENCHMARK_CAPTURE(BM_UiState, sharing, Kind::kSharing)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_UiState, mig, Kind::kMig)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera
