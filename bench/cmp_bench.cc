// The tessera side of the HAMi side-by-side harness (../shared/hami-bench on development
// machines; docs/performance.md, "Side by side with HAMi"): reads a cluster written by the
// harness's Go half (nodes and placed pods as Kubernetes JSON objects, and probe pods), feeds it to
// the service as the informers would, and times one filter decision per probe:
//   filter: ExtenderVerbs::Filter(body) for ExtenderArgs {Pod, NodeNames: every node}: JSON
//           decoding, admission defaults, the scheduling cycle (the probe's previous reservation
//           released, evaluation, reservation), the annotation write to the in-memory cluster,
//           the answer's JSON;
//   eval:   Scheduler::Evaluate on a ClusterState built from the same objects (no JSON, no
//           reservation, no write).
// It also reports which nodes the probe fits (node by node), for the harness to check that both
// schedulers found the same ones.
//
// Usage: tessera_cmp_bench CLUSTER.json ITERS [PROBE ...]   (probes: plain, nocache)

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/codec/json_util.h"
#include "core/codec/k8s_objects.h"
#include "core/config/scheduler_config.h"
#include "core/sched/admission.h"
#include "core/sched/scheduler.h"
#include "core/state/cluster_state.h"
#include "scheduler/scheduler_service.h"
#include "scheduler_runtime/embedded_cluster.h"

namespace tessera {
namespace {

using codec::Json;
using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

double MillisSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// "0-799,1000" for the indices the probe does not fit; "none" when it fits every node.
std::string Ranges(const std::vector<size_t>& indices) {
  std::string out;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(indices[i]);
    if (j > i) out += "-" + std::to_string(indices[j]);
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

struct Loaded {
  scheduler_runtime::EmbeddedCluster writer;
  scheduler::SchedulerService svc{config::SchedulerConfig{}, scheduler::ServiceOptions{}, writer};
  state::ClusterState state{config::SchedulerConfig{}};
  std::vector<std::string> names;
  size_t pods = 0;
};

bool Load(const Json& cluster, Loaded* out) {
  for (const Json& n : cluster["nodes"]) {
    out->svc.view.UpsertNode(n);
    auto node = codec::DecodeNode(n);
    if (!node.ok()) {
      std::fprintf(stderr, "node: %s\n", node.error().message.c_str());
      return false;
    }
    out->state.UpsertNode(*node);
    out->names.push_back(node->name);
  }
  for (const Json& p : cluster["pods"]) {
    out->svc.view.UpsertPod(p);
    auto pod = codec::DecodePod(p);
    if (!pod.ok()) {
      std::fprintf(stderr, "pod: %s\n", pod.error().message.c_str());
      return false;
    }
    auto reservation = state::ClusterState::ReservationFromAnnotations(*pod);
    if (!reservation.ok() || !reservation.value()) {
      std::fprintf(stderr, "pod %s: no reservation\n", pod->Key().c_str());
      return false;
    }
    out->state.AddPod(std::move(*reservation.value()));
    ++out->pods;
  }
  out->svc.view.SetSynced(true);
  return true;
}

int Run(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CLUSTER.json ITERS [PROBE ...]\n", argv[0]);
    return 2;
  }
  const std::string file = argv[1];
  const int iters = std::max(1, std::atoi(argv[2]));
  std::vector<std::string> probes(argv + 3, argv + argc);
  if (probes.empty()) probes = {"plain", "nocache"};

  const auto build_start = Clock::now();
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  const Json cluster = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (cluster.is_discarded() || !cluster.contains("nodes")) {
    std::fprintf(stderr, "%s: not a cluster written by the harness\n", file.c_str());
    return 1;
  }
  auto loaded = std::make_unique<Loaded>();
  if (!Load(cluster, loaded.get())) return 1;
  sched::Scheduler scheduler(loaded->state, sched::PolicyDefaults{});
  const double build_s = MillisSince(build_start) / 1000;
  const std::string tag = file.substr(file.find_last_of('/') + 1);
  const std::vector<std::string>& names = loaded->names;

  for (const std::string& variant : probes) {
    const Json& probe_json = cluster["probes"][variant];
    auto decoded = codec::DecodePod(probe_json);
    if (!decoded.ok()) {
      std::fprintf(stderr, "probe %s: %s\n", variant.c_str(), decoded.error().message.c_str());
      return 1;
    }
    auto admitted = sched::ApplyAdmissionDefaults(*decoded, loaded->state.config().nvidia);
    if (!admitted.ok()) {
      std::fprintf(stderr, "probe %s: %s\n", variant.c_str(), admitted.error().message.c_str());
      return 1;
    }
    const model::Pod probe = admitted->pod;
    constexpr int64_t kNow = 1767225600;
    // As the service does on every filter: the probe's shape seen once, so that
    // fragmentation-aware scoring has a non-empty demand mix.
    (void)scheduler.Schedule(probe, &names, kNow);
    (void)loaded->state.RemovePod(probe.Key());

    const sched::Decision check = scheduler.Evaluate(probe, &names, kNow);
    // Where the probe fits, node by node (a decision names refusals only when none fits).
    std::vector<size_t> infeasible;
    for (size_t i = 0; i < names.size(); ++i) {
      const std::vector<std::string> one = {names[i]};
      if (!scheduler.Evaluate(probe, &one, kNow).scheduled()) infeasible.push_back(i);
    }
    std::string chosen_dev;
    if (!check.containers.empty() && !check.containers.back().empty()) {
      const auto& g = check.containers.back()[0];
      chosen_dev = g.uuid + "/" + std::to_string(g.mem) + "/" + std::to_string(g.cores) +
                   (g.mig_profile.empty() ? "" : "/" + g.mig_profile);
    }

    const std::string body =
        Json{{"Pod", probe_json}, {"Nodes", nullptr}, {"NodeNames", names}}.dump();
    std::string last;
    for (int i = 0; i < 3; ++i) last = loaded->svc.verbs.Filter(body);  // warm-up
    std::vector<double> filter_ms;
    std::vector<double> eval_ms;
    const auto wall_start = Clock::now();
    for (int i = 0; i < iters; ++i) {
      const auto t0 = Clock::now();
      last = loaded->svc.verbs.Filter(body);
      filter_ms.push_back(MillisSince(t0));
    }
    const double wall_s = MillisSince(wall_start) / 1000;
    const Json answer = Json::parse(last, nullptr, false);
    const bool named = !answer.is_discarded() && answer.contains("NodeNames") &&
                       answer["NodeNames"].is_array() && !answer["NodeNames"].empty();
    if (!named) {
      std::fprintf(stderr, "filter found no node: %s\n", last.substr(0, 2000).c_str());
      return 1;
    }
    const std::string filter_node = answer["NodeNames"][0].get<std::string>();
    for (int i = 0; i < iters; ++i) {
      const auto t0 = Clock::now();
      const sched::Decision d = scheduler.Evaluate(probe, &names, kNow);
      eval_ms.push_back(MillisSince(t0));
      if (!d.scheduled()) return 1;
    }
    std::printf(
        "TESSERA case=%s probe=%s iters=%d filter: median_ms=%.3f p99_ms=%.3f mean_ms=%.3f "
        "max_ms=%.3f wall_s=%.2f | eval: median_ms=%.3f p99_ms=%.3f | feasible=%zu "
        "infeasible=%s chosen=%s eval_chosen=%s dev=%s | pods=%zu body_kib=%zu build_s=%.1f\n",
        tag.c_str(), variant.c_str(), iters, Percentile(filter_ms, 0.5),
        Percentile(filter_ms, 0.99), Mean(filter_ms), Percentile(filter_ms, 1.0), wall_s,
        Percentile(eval_ms, 0.5), Percentile(eval_ms, 0.99), names.size() - infeasible.size(),
        Ranges(infeasible).c_str(), filter_node.c_str(), check.node.c_str(), chosen_dev.c_str(),
        loaded->pods, body.size() / 1024, build_s);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) { return tessera::Run(argc, argv); }
