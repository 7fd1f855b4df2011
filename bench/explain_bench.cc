// `GET /explain` for one pending pod (sched::ExplainPod, including the copy of the state the
// service makes under its lock) at 1000 nodes × 8 A100-40GB, shared (hami-core) or MIG.
//
// fill: 0 every node full (the probe fits nowhere: the remedy search runs); 1 every node 80%
// full (the probe fits everywhere). distinct: 1 makes every node count as different (a UUID
// filter naming no GPU turns the per-state-class cache off), the worst case. The probe is the
// filter benchmark's pod (bench_cluster.h). Build and run: bench/CMakeLists.txt.

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "bench_cluster.h"
#include "core/config/scheduler_config.h"
#include "core/sched/explain.h"
#include "core/sched/scheduler.h"
#include "core/state/cluster_state.h"

namespace tessera {
namespace {

struct ExplainCluster {
  state::ClusterState state{config::SchedulerConfig{}};
  std::string error;
  int pods = 0;
};

// Fills each node with the probe's pods up to `share` of what it takes.
std::unique_ptr<ExplainCluster> Build(Kind kind, int nodes, double share) {
  auto c = std::make_unique<ExplainCluster>();
  sched::Scheduler scheduler(c->state, sched::PolicyDefaults{});
  for (int i = 0; i < nodes; ++i) c->state.UpsertNode(MakeNode(NodeName(i), kind));
  int capacity = 0;
  const std::vector<std::string> first = {NodeName(0)};
  while (capacity < 1000 &&
         scheduler.Schedule(MakePod("cap-" + std::to_string(capacity), kind), &first, kNow)
             .scheduled()) {
    ++capacity;
  }
  for (int k = 0; k < capacity; ++k) (void)c->state.RemovePod("bench/cap-" + std::to_string(k));
  const int per_node = static_cast<int>(share * capacity + 0.5);
  for (int i = 0; i < nodes; ++i) {
    const std::vector<std::string> only = {NodeName(i)};
    for (int k = 0; k < per_node; ++k) {
      if (!scheduler.Schedule(MakePod("fill-" + std::to_string(c->pods), kind), &only, kNow)
               .scheduled()) {
        c->error = "filler pod did not fit on " + only[0];
        return c;
      }
      ++c->pods;
    }
  }
  return c;
}

void BM_ExplainPendingPod(benchmark::State& state, Kind kind) {
  const int nodes = static_cast<int>(state.range(0));
  const bool full = state.range(1) == 0;
  const bool distinct = state.range(2) != 0;
  auto c = Build(kind, nodes, full ? 1.0 : 0.8);
  if (!c->error.empty()) {
    state.SkipWithError(c->error.c_str());
    return;
  }
  const model::Pod probe = MakePod("probe", kind, distinct);
  sched::Explanation last;
  for (auto _ : state) {
    last = sched::ExplainPod(c->state, probe, sched::PolicyDefaults{});
    benchmark::DoNotOptimize(last);
  }
  state.SetLabel(std::string(full ? "full" : "uniform80") + (distinct ? ",distinct" : ",cached"));
  state.counters["pods"] = c->pods;
  state.counters["fits"] = last.fits ? 1 : 0;
  state.counters["remedy"] = last.remedy ? static_cast<double>(last.remedy->pods.size()) : 0;
  state.counters["evaluations"] = last.evaluations;
  state.counters["json_kib"] =
      static_cast<double>(sched::ExplanationToJson(last).dump().size()) / 1024.0;
}

// The first phase alone: what the service holds its lock for.
void BM_ExplainUnderTheLock(benchmark::State& state, Kind kind) {
  auto c = Build(kind, static_cast<int>(state.range(0)), 1.0);
  const model::Pod probe = MakePod("probe", kind, /*distinct=*/true);
  for (auto _ : state) {
    sched::ExplainDraft draft = sched::PrepareExplanation(c->state, probe, sched::PolicyDefaults{});
    benchmark::DoNotOptimize(draft);
  }
}

BENCHMARK_CAPTURE(BM_ExplainPendingPod, sharing, Kind::kSharing)
    ->ArgNames({"nodes", "fill", "distinct"})
    ->ArgsProduct({{1000}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ExplainPendingPod, mig, Kind::kMig)
    ->ArgNames({"nodes", "fill", "distinct"})
    ->ArgsProduct({{1000}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ExplainUnderTheLock, sharing, Kind::kSharing)
    ->Arg(1000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ExplainUnderTheLock, mig, Kind::kMig)
    ->Arg(1000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera
