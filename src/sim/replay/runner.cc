#include "sim/replay/runner.h"
#include "sim/replay/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "sim/replay/cluster.h"
#include "sim/replay/workload.h"

namespace tessera::sim::replay {
namespace {

using Clock = std::chrono::steady_clock;

// The nearest-rank percentile (reorders `samples`).
double Percentile(std::vector<float>& samples, size_t percent) {
  if (samples.empty()) return 0;
  const size_t rank = (samples.size() * percent + 99) / 100 - 1;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(rank),
                   samples.end());
  return samples[rank];
}

}  // namespace

std::string TraceArrivalKey(size_t i) { return "trace/pod-" + std::to_string(i); }

Result<SeedResult> RunSeed(const std::vector<TraceNode>& nodes, const TargetWorkload& target,
                           const std::vector<TracePod>& pods, Policy& policy, uint64_t seed,
                           double tune, const std::function<void(int)>& on_percent,
                           TieBreak tie_break) {
  const auto start = Clock::now();
  std::mt19937_64 rng(seed);
  int64_t total_gpu_milli = 0;
  for (const TraceNode& node : nodes) total_gpu_milli += node.gpus * kMilliPerGpu;
  const std::vector<TracePod> replay = Inflate(pods, total_gpu_milli, tune, rng);
  // With first-in-order ties the node list order matters: draw it as the simulator does.
  ReplayCluster cluster(
      tie_break == TieBreak::kFirstInNodeOrder ? SchedulerNodeOrder(nodes, rng) : nodes, tie_break);

  const FragCalculator frag(target, cluster.model_names());
  std::vector<double> node_frag(cluster.node_count());
  double cluster_frag = 0;
  for (int node = 0; node < cluster.node_count(); ++node) {
    node_frag[node] = frag.NodeFrag(cluster, node);
    cluster_frag += node_frag[node];
  }

  SeedResult result;
  result.seed = seed;
  result.policy = std::string(policy.Name());
  result.pods = static_cast<int64_t>(replay.size());
  SeriesRecorder recorder(cluster.total_gpus());
  std::vector<float> latencies_us;
  latencies_us.reserve(replay.size());
  int64_t arrived = 0;
  int percent_reported = 0;
  for (size_t i = 0; i < replay.size(); ++i) {
    const TracePod& pod = replay[i];
    arrived += pod.TotalGpuMilli();
    const auto decision_start = Clock::now();
    const std::string key = TraceArrivalKey(i);
    Result<PlaceOutcome> outcome = policy.Place(cluster, pod, key, rng);
    if (!outcome.ok()) {
      return Error{"policy " + result.policy + ", seed " + std::to_string(seed) + ": " +
                   outcome.error().message};
    }
    if (*outcome == PlaceOutcome::kPlaced) {
      const std::optional<Choice> placed = cluster.PlacementOf(key);
      if (!placed) {
        return Error{"policy " + result.policy + ", seed " + std::to_string(seed) + ": " + key +
                     " placed but not reserved"};
      }
      ++result.scheduled;
      // Only the chosen node changed, and those a move changed: refresh their F_n(M) alone.
      std::vector<int> changed = policy.TakeOtherChangedNodes();
      changed.push_back(placed->node);
      std::sort(changed.begin(), changed.end());
      changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
      for (int node : changed) {
        const double updated = frag.NodeFrag(cluster, node);
        cluster_frag += updated - node_frag[node];
        node_frag[node] = updated;
      }
    } else {
      ++result.failed_by_kind[static_cast<int>(KindOf(pod))];
    }
    latencies_us.push_back(
        std::chrono::duration<float, std::micro>(Clock::now() - decision_start).count());
    // The simulator's idle milli is the sum of all fragment categories: idle * sum(p_m).
    recorder.Record(arrived, cluster.allocated_gpu_milli(), std::max(cluster_frag, 0.0),
                    static_cast<double>(cluster.idle_gpu_milli()) * frag.probability_sum());
    if (on_percent) {
      const int percent = static_cast<int>((i + 1) * 100 / replay.size());
      while (percent_reported < percent) on_percent(++percent_reported);
    }
  }
  if (on_percent) {
    while (percent_reported < 100) on_percent(++percent_reported);
  }
  result.series = recorder.Finish();
  result.evictions = policy.evictions();
  result.decision_p50_us = Percentile(latencies_us, 50);
  result.decision_p99_us = Percentile(latencies_us, 99);
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

Result<std::vector<SeedResult>> RunReplay(const std::vector<TraceNode>& nodes,
                                          const std::vector<TracePod>& pods,
                                          std::string_view policy,
                                          const std::vector<uint64_t>& seeds, double tune, int jobs,
                                          const PolicyFactories* extra, const ProgressFn& progress,
                                          TieBreak tie_break) {
  const TargetWorkload target = BuildTargetWorkload(pods);
  std::vector<std::unique_ptr<Policy>> policies;
  for (size_t i = 0; i < seeds.size(); ++i) {
    auto made = MakePolicy(policy, target, extra);
    if (!made.ok()) return made.error();
    policies.push_back(std::move(made.value()));
  }

  const int total_steps = static_cast<int>(seeds.size()) * kProgressStepsPerSeed;
  std::mutex progress_mutex;
  int done_steps = 0;
  auto step = [&](int) {
    if (!progress) return;
    std::lock_guard<std::mutex> lock(progress_mutex);
    progress(++done_steps, total_steps);
  };

  std::vector<std::optional<Result<SeedResult>>> results(seeds.size());
  ForEachInParallel(seeds.size(), jobs, [&](size_t i) {
    results[i] = RunSeed(nodes, target, pods, *policies[i], seeds[i], tune, step, tie_break);
  });

  std::vector<SeedResult> out;
  out.reserve(seeds.size());
  for (auto& result : results) {
    if (!result->ok()) return result->error();
    out.push_back(std::move(result->value()));
  }
  return out;
}

}  // namespace tessera::sim::replay
