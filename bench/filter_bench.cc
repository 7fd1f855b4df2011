// One filter decision (Scheduler::Evaluate: request parsing, per-node fit, scoring, choosing a
// node) over clusters of 100, 1000 and 5000 nodes with 8 A100-40GB GPUs each, shared (hami-core)
// or in MIG mode, empty or 80% occupied. Only Evaluate is timed; the cluster is built and filled
// once per benchmark, before the timed loop.
//
// Arguments:
//   nodes     100, 1000, 5000 (8 GPUs each).
//   fill      0 empty; 1 uniform80: round(0.8 * C) pods on every node, where C is how many of the
//             benchmarked pods one empty node takes (every node still fits and is scored);
//             2 packed80: round(0.8 * nodes) nodes full (C pods), the rest empty, which is what
//             the default binpack policy converges to (full nodes are rejected);
//             3 full (BM_FilterDecisionNothingFits only): C pods on every node;
//             4 varied: every node filled with its own random pods (shapes and count drawn from
//             a generator seeded with the node's index: sharing 2000-12000 MiB and 0-30 cores,
//             MIG one or two instances of 1g.5gb, 2g.10gb or 3g.20gb, up to 90% of the node),
//             so that nodes differ in their GPUs' usage and layouts, not only in host CPU or
//             names: few share a state class, and no two nodes need share a MIG plan.
//   distinct  0: nodes in the same state share one evaluation (the scheduler's equivalence
//             cache; here all nodes of one fill level are identical, the best case);
//             1: the equivalence cache is off (Scheduler::set_equivalence_cache), which changes
//             no answer: every node is evaluated, as in a cluster whose nodes all differ (the
//             worst case). (Until the cache learnt to serve pods that name GPU UUIDs, the probe
//             named a GPU that does not exist instead, with the same effect.)
// Before filling, the probe pod is scheduled once and released, so that the demand mix used by
// fragmentation-aware scoring is non-empty in every case (the empty cluster included).
//
// Build and run: see bench/CMakeLists.txt and docs/performance.md.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "adapters/threads/thread_pool.h"
#include "bench_cluster.h"
#include "core/codec/node_register.h"
#include "core/config/scheduler_config.h"
#include "core/mig/catalog.h"
#include "core/model/annotations.h"
#include "core/model/device.h"
#include "core/model/pod.h"
#include "core/sched/scheduler.h"
#include "core/state/cluster_state.h"

namespace tessera {
namespace {

enum class Fill { kEmpty = 0, kUniform80 = 1, kPacked80 = 2, kFull = 3, kVaried = 4 };

const char* FillName(Fill f) {
  switch (f) {
    case Fill::kEmpty:
      return "empty";
    case Fill::kUniform80:
      return "uniform80";
    case Fill::kPacked80:
      return "packed80";
    case Fill::kFull:
      return "full";
    case Fill::kVaried:
      return "varied";
  }
  return "?";
}

// How many benchmark pods one empty node takes.
int NodeCapacity(Kind kind) {
  state::ClusterState state{config::SchedulerConfig{}};
  state.UpsertNode(MakeNode("probe", kind));
  sched::Scheduler scheduler(state, sched::PolicyDefaults{});
  int n = 0;
  while (n < 1000 &&
         scheduler.Schedule(MakePod("cap-" + std::to_string(n), kind), nullptr, kNow).scheduled()) {
    ++n;
  }
  return n;
}

struct Cluster {
  std::tuple<int, int, int> key;
  state::ClusterState state{config::SchedulerConfig{}};
  std::unique_ptr<sched::Scheduler> scheduler;
  int capacity = 0;
  int pods = 0;
  std::string error;
};

// Builds (registers every node, then schedules the filler pods) outside the timed loop. The last
// cluster is kept so that Google Benchmark's repeated runs of one benchmark reuse it.
Cluster& GetCluster(Kind kind, int nodes, Fill fill) {
  static std::unique_ptr<Cluster> cached;
  const auto key = std::make_tuple(static_cast<int>(kind), nodes, static_cast<int>(fill));
  if (cached && cached->key == key) return *cached;
  cached.reset();
  auto c = std::make_unique<Cluster>();
  c->key = key;
  for (int i = 0; i < nodes; ++i) c->state.UpsertNode(MakeNode(NodeName(i), kind));
  c->scheduler = std::make_unique<sched::Scheduler>(c->state, sched::PolicyDefaults{});
  const model::Pod warmup = MakePod("warmup", kind);
  if (!c->scheduler->Schedule(warmup, nullptr, kNow).scheduled()) {
    c->error = "the probe pod does not fit on an empty node";
  }
  (void)c->state.RemovePod(warmup.Key());
  c->capacity = NodeCapacity(kind);
  int per_node_uniform = 0;
  int full_nodes = 0;
  if (fill == Fill::kUniform80) {
    per_node_uniform = static_cast<int>(std::lround(0.8 * c->capacity));
  } else if (fill == Fill::kPacked80) {
    full_nodes = static_cast<int>(std::lround(0.8 * nodes));
  } else if (fill == Fill::kFull) {
    per_node_uniform = c->capacity;
  }
  for (int i = 0; i < nodes && fill == Fill::kVaried; ++i) {
    // Shapes and how far to fill, from the node's own generator: the same cluster every run.
    std::mt19937_64 rng(static_cast<uint64_t>(i) * 7919 + 17);
    const std::vector<std::string> only = {NodeName(i)};
    const int target = static_cast<int>(rng() % (c->capacity * 9 / 10 + 1));
    for (int k = 0, misses = 0; k < target && misses < 8;) {
      model::Pod pod;
      const std::string name = "fill-" + std::to_string(c->pods);
      if (kind == Kind::kSharing) {
        pod = MakeSizedPod(name, kind, 1, 2000 * static_cast<int>(1 + rng() % 6),
                           10 * static_cast<int>(rng() % 4));
      } else {
        constexpr int kMemory[] = {4000, 9000, 19000};
        pod = MakeSizedPod(name, kind, 1 + static_cast<int>(rng() % 2), kMemory[rng() % 3], 0);
      }
      if (c->scheduler->Schedule(pod, &only, kNow).scheduled()) {
        ++c->pods;
        ++k;
      } else {
        ++misses;  // that shape no longer fits: try others, then stop
      }
    }
  }
  for (int i = 0; i < nodes && c->error.empty() && fill != Fill::kVaried; ++i) {
    const int count =
        fill == Fill::kPacked80 ? (i < full_nodes ? c->capacity : 0) : per_node_uniform;
    const std::vector<std::string> only = {NodeName(i)};
    for (int k = 0; k < count; ++k) {
      auto d =
          c->scheduler->Schedule(MakePod("fill-" + std::to_string(c->pods), kind), &only, kNow);
      if (!d.scheduled()) {
        c->error = "filler pod did not fit on " + only[0] + ": " + d.message;
        break;
      }
      ++c->pods;
    }
  }
  cached = std::move(c);
  return *cached;
}

void BM_FilterDecision(benchmark::State& state, Kind kind) {
  const int nodes = static_cast<int>(state.range(0));
  const Fill fill = static_cast<Fill>(state.range(1));
  const bool distinct = state.range(2) != 0;
  Cluster& c = GetCluster(kind, nodes, fill);
  const model::Pod probe = MakePod("probe", kind);
  c.scheduler->set_equivalence_cache(!distinct);
  if (!c.error.empty()) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  // The probe pod must fit somewhere, or the benchmark would time a rejection.
  const sched::Decision check = c.scheduler->Evaluate(probe, nullptr, kNow);
  if (!check.scheduled()) {
    state.SkipWithError(("probe pod does not fit: " + check.message).c_str());
    return;
  }
  for (auto _ : state) {
    sched::Decision d = c.scheduler->Evaluate(probe, nullptr, kNow);
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(FillName(fill)) + (distinct ? ",distinct" : ",cached"));
  state.counters["gpus"] = static_cast<double>(nodes) * kGpusPerNode;
  state.counters["pods"] = c.pods;
  state.counters["node_cap"] = c.capacity;
  // Nodes the probe fits on, each asked alone (a decision that fits lists no failed nodes, so
  // they cannot be counted from it).
  int feasible = 0;
  for (int i = 0; i < nodes; ++i) {
    const std::vector<std::string> only = {NodeName(i)};
    feasible += c.scheduler->Evaluate(probe, &only, kNow).scheduled() ? 1 : 0;
  }
  state.counters["feasible"] = feasible;
}

// The same decision with a GPU quota on the probe's namespace (a limit it stays under): the
// per-GPU quota check in the filter, against BM_FilterDecision's figure for the same case.
void BM_FilterDecisionUnderQuota(benchmark::State& state, Kind kind) {
  const int nodes = static_cast<int>(state.range(0));
  Cluster& c = GetCluster(kind, nodes, Fill::kUniform80);
  const model::Pod probe = MakePod("probe", kind);
  c.scheduler->set_equivalence_cache(false);
  if (!c.error.empty()) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  c.state.UpsertQuota({probe.ns, "bench", {{"limits.nvidia.com/gpumem", "1000000000000"}}});
  const sched::Decision check = c.scheduler->Evaluate(probe, nullptr, kNow);
  if (!check.scheduled()) {
    state.SkipWithError(("probe pod does not fit: " + check.message).c_str());
  } else {
    for (auto _ : state) {
      sched::Decision d = c.scheduler->Evaluate(probe, nullptr, kNow);
      benchmark::DoNotOptimize(d);
    }
    state.SetItemsProcessed(state.iterations());
    state.SetLabel("uniform80,distinct,quota");
  }
  c.state.RemoveQuota(probe.ns, "bench");
}

// The distinct case (every node evaluated) with the filter's nodes split among `threads`
// threads of a pool (tessera serve --filter-threads): wall time, so the scaling from 1 to 2
// shows on a machine with two cores.
void BM_FilterDecisionOnThreads(benchmark::State& state, Kind kind) {
  const int nodes = static_cast<int>(state.range(0));
  const Fill fill = static_cast<Fill>(state.range(1));
  const auto threads = static_cast<size_t>(state.range(2));
  Cluster& c = GetCluster(kind, nodes, fill);
  const model::Pod probe = MakePod("probe", kind);
  threads::ThreadPool pool(threads);
  c.scheduler->set_equivalence_cache(false);
  c.scheduler->set_filter_runner(&pool);
  const sched::Decision check = c.scheduler->Evaluate(probe, nullptr, kNow);
  if (!c.error.empty() || !check.scheduled()) {
    c.scheduler->set_filter_runner(nullptr);
    state.SkipWithError(c.error.empty() ? ("probe pod does not fit: " + check.message).c_str()
                                        : c.error.c_str());
    return;
  }
  for (auto _ : state) {
    sched::Decision d = c.scheduler->Evaluate(probe, nullptr, kNow);
    benchmark::DoNotOptimize(d);
  }
  c.scheduler->set_filter_runner(nullptr);  // the pool goes away with this function
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(FillName(fill)) + ",distinct," + std::to_string(threads) + " threads");
}

// A pod that names GPU UUIDs (nvidia.com/nouse-gpuuuid with one GPU of the first node): the
// equivalence cache still serves every node whose GPUs it does not name, so this should cost
// about the cached case, not the distinct one.
void BM_FilterDecisionNamingAGpu(benchmark::State& state, Kind kind) {
  const int nodes = static_cast<int>(state.range(0));
  Cluster& c = GetCluster(kind, nodes, Fill::kUniform80);
  c.scheduler->set_equivalence_cache(true);
  model::Pod probe = MakePod("probe", kind);
  probe.annotations[std::string(model::annotations::kNoUseGpuUuid)] =
      c.state.node(NodeName(0))->devices.at(0).uuid;
  if (!c.error.empty()) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  const sched::Decision check = c.scheduler->Evaluate(probe, nullptr, kNow);
  if (!check.scheduled()) {
    state.SkipWithError(("probe pod does not fit: " + check.message).c_str());
    return;
  }
  for (auto _ : state) {
    sched::Decision d = c.scheduler->Evaluate(probe, nullptr, kNow);
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel("uniform80,names-a-gpu");
}

// The shape of the HAMi side-by-side harness's sharing clusters (bench/cmp_bench.cc,
// docs/performance.md "Side by side with HAMi"), where the summaries alone once failed to rank:
// probe-shaped pods (8000 MiB, 30 cores) pinned to GPUs as HAMi's annotations place them, 3 on
// GPUs 0-2 and 2 on GPUs 3-7 (80% of what a node takes); with `node_specific`, the second pod on
// GPU 7 asks 1000 + i MiB on node i, so that no two nodes are alike (the harness's d80; without
// it, u80). The probe is the fillers' shape; `distinct` also names a GPU that does not exist
// (the harness's nocache probe), which changes no answer.
struct HarnessCluster {
  state::ClusterState state{config::SchedulerConfig{}};
  std::unique_ptr<sched::Scheduler> scheduler;
  std::string error;
};

HarnessCluster& GetHarnessCluster(int nodes, bool node_specific) {
  static std::unique_ptr<HarnessCluster> cached;
  static std::pair<int, bool> cached_key;
  if (cached && cached_key == std::make_pair(nodes, node_specific)) return *cached;
  cached = std::make_unique<HarnessCluster>();
  cached_key = {nodes, node_specific};
  HarnessCluster& c = *cached;
  for (int i = 0; i < nodes; ++i) c.state.UpsertNode(MakeNode(NodeName(i), Kind::kSharing));
  c.scheduler = std::make_unique<sched::Scheduler>(c.state, sched::PolicyDefaults{});
  constexpr int kPerGpu[kGpusPerNode] = {3, 3, 3, 2, 2, 2, 2, 2};
  int filled = 0;
  for (int i = 0; i < nodes && c.error.empty(); ++i) {
    const std::vector<std::string> only = {NodeName(i)};
    for (int g = 0; g < kGpusPerNode; ++g) {
      for (int k = 0; k < kPerGpu[g]; ++k) {
        const int mem = node_specific && g == kGpusPerNode - 1 && k == 1 ? 1000 + i : 8000;
        model::Pod pod =
            MakeSizedPod("fill-" + std::to_string(filled++), Kind::kSharing, 1, mem, 30);
        pod.annotations[std::string(model::annotations::kUseGpuUuid)] =
            c.state.node(only[0])->devices.at(static_cast<size_t>(g)).uuid;
        const sched::Decision d = c.scheduler->Schedule(pod, &only, kNow);
        if (!d.scheduled()) c.error = "filler did not fit on " + only[0] + ": " + d.message;
      }
    }
  }
  return c;
}

void BM_FilterDecisionHarnessShape(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const bool node_specific = state.range(1) != 0;
  const bool distinct = state.range(2) != 0;
  HarnessCluster& c = GetHarnessCluster(nodes, node_specific);
  model::Pod probe = MakeSizedPod("probe", Kind::kSharing, 1, 8000, 30);
  if (distinct) probe.annotations[std::string(model::annotations::kNoUseGpuUuid)] = "GPU-none";
  // As the service does on every filter: the probe's shape seen once (the demand mix).
  (void)c.scheduler->Schedule(probe, nullptr, kNow);
  (void)c.state.RemovePod(probe.Key());
  const sched::Decision check = c.scheduler->Evaluate(probe, nullptr, kNow);
  if (!c.error.empty() || !check.scheduled()) {
    state.SkipWithError(c.error.empty() ? ("probe does not fit: " + check.message).c_str()
                                        : c.error.c_str());
    return;
  }
  for (auto _ : state) {
    sched::Decision d = c.scheduler->Evaluate(probe, nullptr, kNow);
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(node_specific ? "d80" : "u80") + (distinct ? ",nocache" : ",plain"));
}

// A decision that fits nowhere (every node full): what kube-scheduler's filter gets for a pod that
// waits, with every node's HAMi reason and whether preemption could help there
// (ResolvableByPreemption, worked out once per evaluated state).
void BM_FilterDecisionNothingFits(benchmark::State& state, Kind kind) {
  const int nodes = static_cast<int>(state.range(0));
  const bool distinct = state.range(1) != 0;
  Cluster& c = GetCluster(kind, nodes, Fill::kFull);
  const model::Pod probe = MakePod("probe", kind);
  c.scheduler->set_equivalence_cache(!distinct);
  if (!c.error.empty()) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  sched::Decision d = c.scheduler->Evaluate(probe, nullptr, kNow);
  if (d.scheduled()) {
    state.SkipWithError("the probe pod fits on a full node");
    return;
  }
  for (auto _ : state) {
    d = c.scheduler->Evaluate(probe, nullptr, kNow);
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string("full") + (distinct ? ",distinct" : ",cached"));
  state.counters["failed"] = static_cast<double>(d.failed_nodes.size());
  state.counters["unresolvable"] = static_cast<double>(
      std::count_if(d.failed_nodes.begin(), d.failed_nodes.end(),
                    [](const auto& failed) { return !failed.second.resolvable(); }));
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"nodes", "fill", "distinct"});
  b->ArgsProduct({{100, 1000, 5000}, {0, 1, 2, 4}, {0, 1}});
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(BM_FilterDecision, sharing, Kind::kSharing)->Apply(Args);
BENCHMARK(BM_FilterDecisionHarnessShape)
    ->ArgNames({"nodes", "d80", "nocache"})
    ->ArgsProduct({{1000, 5000}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_FilterDecisionUnderQuota, sharing, Kind::kSharing)
    ->ArgName("nodes")
    ->Arg(5000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_FilterDecision, mig, Kind::kMig)->Apply(Args);
BENCHMARK_CAPTURE(BM_FilterDecisionOnThreads, sharing, Kind::kSharing)
    ->ArgNames({"nodes", "fill", "threads"})
    ->ArgsProduct({{5000}, {0, 1}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_FilterDecisionOnThreads, mig, Kind::kMig)
    ->ArgNames({"nodes", "fill", "threads"})
    ->ArgsProduct({{5000}, {0, 1}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_FilterDecisionNamingAGpu, sharing, Kind::kSharing)
    ->ArgName("nodes")
    ->Arg(5000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_FilterDecisionNamingAGpu, mig, Kind::kMig)
    ->ArgName("nodes")
    ->Arg(5000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_FilterDecisionNothingFits, sharing, Kind::kSharing)
    ->ArgNames({"nodes", "distinct"})
    ->ArgsProduct({{1000, 5000}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_FilterDecisionNothingFits, mig, Kind::kMig)
    ->ArgNames({"nodes", "distinct"})
    ->ArgsProduct({{1000, 5000}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
