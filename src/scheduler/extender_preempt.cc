// ExtenderVerbs::Preempt: kube-scheduler's preemptVerb. For each candidate node, the victims the
// GPU search chooses on a copy of the node (core/sched/preemption.h; docs/preemption.md).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/codec/k8s_objects.h"
#include "core/extender/extender_preemption.h"
#include "core/sched/admission.h"
#include "core/sched/preemption.h"
#include "scheduler/extender_verbs.h"

namespace tessera::scheduler {

namespace {

// Per candidate node: the exhaustive search stops at sets of this many pods or this many fits
// (each a single-node filter), and then takes kube-scheduler's reprieve pass. The request as a
// whole stops at ServiceOptions::preempt_fit_budget.
constexpr int kMaxVictims = 4;
constexpr int kMaxFitsPerNode = 256;

// Victims per node a client may name: a node's pod limit is far below.
constexpr size_t kMaxVictimsPerNode = 1000;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The answer for one node where the search chose `set`: its pods by uid, then those of
// kube-scheduler's victims that hold no GPU here (kube-scheduler chose them for its own
// resources, CPU or memory, which the GPU search does not see).
extender::MetaVictims Answer(const sched::VictimSet& set,
                             const std::map<std::string, std::string>& uid_of_gpu_pod,
                             const extender::MetaVictims& kube_scheduler) {
  extender::MetaVictims out;
  std::set<std::string> gpu_uids;
  for (const auto& [key, uid] : uid_of_gpu_pod) gpu_uids.insert(uid);
  for (const auto& key : set.pods) out.pod_uids.push_back(uid_of_gpu_pod.at(key));
  out.num_pdb_violations = set.cost.pdb_violations;
  bool kept_theirs = false;
  for (const auto& uid : kube_scheduler.pod_uids) {
    if (gpu_uids.contains(uid)) continue;
    out.pod_uids.push_back(uid);
    kept_theirs = true;
  }
  // Their count covers their whole set: an upper bound for the part kept.
  if (kept_theirs) out.num_pdb_violations += kube_scheduler.num_pdb_violations;
  return out;
}

}  // namespace

ExtenderVerbs::PreemptAnswer ExtenderVerbs::Preempt(std::string_view body) {
  const auto start = std::chrono::steady_clock::now();
  ServiceMetrics& metrics = view_.metrics();
  PreemptAnswer answer;
  auto fail = [&](std::string error, bool bad_request) {
    answer.error = std::move(error);
    answer.bad_request = bad_request;
    metrics.PreemptDone("error", SecondsSince(start));
    return answer;
  };
  extender::PreemptionArgsLimits limits;
  limits.max_nodes = candidate_limit();
  limits.max_victims_per_node = kMaxVictimsPerNode;
  auto args = extender::DecodePreemptionArgs(body, limits);
  if (!args.ok()) return fail(args.error().message, true);
  auto decoded = codec::DecodePod(args->pod);
  if (!decoded.ok()) return fail("ExtenderPreemptionArgs.Pod: " + decoded.error().message, true);
  std::string why;
  if (!view_.WaitReady(&why)) return fail(why, false);
  // As filter sees it: pods created without the webhook get its resource defaults.
  auto admitted = sched::ApplyAdmissionDefaults(*decoded, view_.config().nvidia);
  const model::Pod& pod = admitted.ok() ? admitted->pod : *decoded;

  std::vector<std::string> names;
  names.reserve(args->victims_by_node.size());
  for (const auto& [node, victims] : args->victims_by_node) names.push_back(node);
  ClusterView::PreemptionCopies copies = view_.CopyForPreemption(names);
  std::map<std::string, extender::MetaVictims> kept;
  size_t chosen = 0, passed = 0, dropped = 0, over_budget = 0;
  int fits_left = view_.options().preempt_fit_budget;
  for (size_t i = 0; i < names.size(); ++i) {
    if (fits_left <= 0) {
      ++over_budget;
      continue;
    }
    const extender::MetaVictims& theirs = args->victims_by_node.at(names[i]);
    std::map<std::string, std::string> uid_of_gpu_pod;
    for (const state::NodeState* n : copies.nodes[i].node_list()) {
      for (const std::string& key : n->pods) {
        if (const state::PodReservation* r = copies.nodes[i].pod(key)) uid_of_gpu_pod[key] = r->uid;
      }
    }
    const sched::NodeVictims found = sched::FindVictims(
        std::move(copies.nodes[i]), pod, view_.options().policy, copies.budgets,
        copies.awaiting_bind, {kMaxVictims, std::min(kMaxFitsPerNode, fits_left)});
    fits_left -= found.evaluations;
    using Verdict = sched::NodeVictims::Verdict;
    switch (found.verdict) {
      case Verdict::kVictims:
        kept[names[i]] = Answer(*found.victims, uid_of_gpu_pod, theirs);
        ++chosen;
        break;
      case Verdict::kFitsNow:
      case Verdict::kNotGpuPod:
        // GPUs do not keep the pod out: kube-scheduler's own victims stand. A node sent without
        // victims (kube-scheduler with PR #135486: its plugins fit the pod with no eviction)
        // stays without, for another extender to fill; kube-scheduler drops it if none does.
        kept[names[i]] = theirs;
        ++passed;
        break;
      case Verdict::kNoSet:
      case Verdict::kInvalidPod:
        ++dropped;
        break;
    }
  }
  metrics.PreemptNodes("chosen", chosen);
  metrics.PreemptNodes("passed", passed);
  metrics.PreemptNodes("dropped", dropped);
  metrics.PreemptNodes("over_budget", over_budget);
  metrics.PreemptDone("ok", SecondsSince(start));
  spdlog::info(
      "preempt {}: {} candidate nodes, victims chosen on {}, kube-scheduler's kept on {}, "
      "{} dropped, {} left out past the request's fit budget",
      pod.Key(), names.size(), chosen, passed, dropped, over_budget);
  answer.body = extender::EncodePreemptionResult(kept);
  return answer;
}

}  // namespace tessera::scheduler
