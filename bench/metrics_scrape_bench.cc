// One /metrics scrape of a large cluster (issue 41): 5 000 sharing nodes of 8 GPUs with 40 000
// bound pods, fed to a ClusterView as the informer feeds it, then the state's metric families
// rendered as /metrics renders them with --legacy-metrics, two ways:
//   families   every family built first, then serialized (what /metrics did before)
//   streamed   each family serialized as soon as it is built, then dropped (ReadViews::
//              StateMetricsText, what /metrics does now)
// Each way runs in a process of its own (the argument), so that its peak is its own: printed are
// the peak RSS (VmHWM) above the process's before the scrape, the time under the view's lock
// and the whole time, and the text's size.
//
// Build and run (Release): ninja -C build/release tessera_metrics_scrape_bench &&
// build/release/bench/tessera_metrics_scrape_bench families|streamed [NODES]

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_cluster.h"
#include "no_writes.h"
#include "scheduler/scheduler_service.h"

namespace tessera {
namespace {

// The process's peak resident set so far, in KiB.
long PeakRssKib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  using namespace tessera;
  using Clock = std::chrono::steady_clock;
  const std::string how = argc > 1 ? argv[1] : "streamed";
  const int nodes = argc > 2 ? std::atoi(argv[2]) : 5000;
  if (how != "families" && how != "streamed") {
    std::fprintf(stderr, "usage: %s families|streamed [NODES]\n", argv[0]);
    return 2;
  }
  NoWrites writer;
  auto service = std::make_unique<scheduler::SchedulerService>(config::SchedulerConfig{},
                                                               scheduler::ServiceOptions{}, writer);
  for (int i = 0; i < nodes; ++i) {
    service->view.UpsertNodeModel(MakeNode(NodeName(i), Kind::kSharing));
  }
  service->view.SetSynced(true);
  const int pods = nodes * kGpusPerNode;
  for (int k = 0; k < pods; ++k) service->view.UpsertPodModel(BoundSharingPod(k, nodes));
  const long before = PeakRssKib();
  const auto start = Clock::now();
  std::string text;
  double locked_ms = 0;
  if (how == "families") {
    std::vector<prometheus::MetricFamily> families = service->reads.StateFamilies();
    locked_ms = Ms(Clock::now() - start);
    const auto legacy = scheduler::LegacyGpuUsageFamilies(families);
    families.insert(families.end(), legacy.begin(), legacy.end());
    text = service->view.metrics().Render(families);
  } else {
    text = service->view.metrics().RenderWith(service->reads.StateMetricsText(true), {});
  }
  const double total_ms = Ms(Clock::now() - start);
  const long after = PeakRssKib();
  double longest_hold_ms = locked_ms;
  if (how == "streamed") {
    // The lock holds of StateMetricsText, again: one per builder, each building its families.
    std::optional<sched::MigDemandMix> mix;
    service->view.ReadForMetrics(
        [&](const scheduler::ClusterView::MetricsReading& r) { mix = r.mig_demand_mix; });
    const sched::MigWeights weights(*mix, sched::MigPrior{});
    std::vector<scheduler::StateFamilyBuilder> builders = scheduler::GpuUsageFamilyBuilders();
    for (auto& b : scheduler::PlacementFamilyBuilders(weights)) builders.push_back(std::move(b));
    longest_hold_ms = 0;
    for (const auto& build : builders) {
      const auto hold = Clock::now();
      service->view.WithState([&](const state::ClusterState& st) { (void)build(st); });
      const double ms = Ms(Clock::now() - hold);
      locked_ms += ms;
      longest_hold_ms = std::max(longest_hold_ms, ms);
    }
  }
  std::printf(
      "%s: %d nodes x %d GPUs, %d pods: scrape peak +%.1f MiB RSS, %.0f ms under the lock "
      "(longest hold %.0f ms), %.0f ms in all, text %.1f MiB\n",
      how.c_str(), nodes, kGpusPerNode, pods, static_cast<double>(after - before) / 1024, locked_ms,
      longest_hold_ms, total_ms, static_cast<double>(text.size()) / (1024 * 1024));
  return 0;
}
