#include "scheduler/extender_verbs.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "core/codec/k8s_objects.h"
#include "core/extender/admission_review.h"
#include "core/extender/extender_args_decoder.h"
#include "core/extender/extender_protocol.h"
#include "core/model/annotations.h"
#include "core/sched/admission.h"
#include "core/sched/near_miss.h"
#include "core/sched/node_status.h"
#include "scheduler/object_name.h"
#include "scheduler/placement_annotations.h"

namespace tessera::scheduler {

namespace ann = model::annotations;
using codec::Json;

namespace {

// One decoder per thread: it keeps its parser's buffers from one request to the next.
extender::ExtenderArgsDecoder& ArgsDecoder() {
  thread_local extender::ExtenderArgsDecoder decoder;
  return decoder;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// FilteringFailed's message in HAMi's shape: "<n> nodes <Reason>(<nodes>)" per reason word
// (each counts once per node); an unusable node says why in full (the metric does not).
std::string FailureSummary(const std::map<std::string, sched::NodeStatus>& failed) {
  std::map<std::string_view, std::vector<std::string_view>> by_reason;
  for (const auto& [name, status] : failed) {
    const std::string_view node = name;
    if (status.code == sched::NodeStatus::Code::kUnusable) {
      by_reason[status.detail].push_back(node);
      continue;
    }
    sched::ForEachReasonWord(status,
                             [&](std::string_view word) { by_reason[word].push_back(node); });
  }
  std::string out;
  for (const auto& [reason, nodes] : by_reason) {
    if (!out.empty()) out += "; ";
    out += std::to_string(nodes.size()) + " nodes ";
    out += reason;
    out += "(";
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (i > 0) out += ",";
      out += nodes[i];
    }
    out += ")";
  }
  return out;
}

// What filter tells kube-scheduler about `decision` among `candidates` (the request's names).
extender::FilterResult FilterAnswer(const extender::ExtenderArgs& args,
                                    const std::vector<std::string>& candidates,
                                    const sched::Decision& decision) {
  extender::FilterResult result;
  if (decision.passthrough()) {
    result.node_names = args.node_names;
    result.nodes = args.nodes;
    return result;
  }
  if (decision.invalid_request()) {
    // Preemption cannot fix a malformed request: every node is unresolvable, with the reason.
    for (const auto& n : candidates) result.failed_and_unresolvable[n] = decision.message;
    if (candidates.empty()) result.error = decision.message;
    return result;
  }
  if (!decision.scheduled()) {
    // Nodes where evicting pods cannot make room go where kube-scheduler's preemption skips them
    // (HAMi puts every node in FailedNodes, so preemption may evict pods for nothing).
    // The texts come in the statuses' order (the same keys).
    std::map<std::string, std::string> texts = sched::FormatNodeStatuses(decision.failed_nodes);
    auto text = texts.begin();
    for (const auto& [node, status] : decision.failed_nodes) {
      auto& into = status.resolvable() ? result.failed_nodes : result.failed_and_unresolvable;
      into.emplace_hint(into.end(), node, std::move((text++)->second));
    }
    if (result.failed_nodes.empty() && result.failed_and_unresolvable.empty()) {
      // No candidate at all: kube-scheduler needs a reason somewhere.
      result.error = decision.message.empty() ? "no nodes to choose from" : decision.message;
    }
    return result;
  }
  if (args.node_names || !args.nodes) {
    result.node_names = std::vector<std::string>{decision.node};
  } else {
    for (const auto& n : *args.nodes) {
      const Json* meta = codec::FindKey(n, "metadata");
      const Json* name = meta != nullptr ? codec::FindKey(*meta, "name") : nullptr;
      if (name != nullptr && name->is_string() && name->get<std::string>() == decision.node) {
        result.nodes = std::vector<Json>{n};
      }
    }
  }
  return result;
}

// Why bind must not go ahead, from the pod's last filter answer; empty when it may. Sets
// `already_bound` when the pod is bound to that node already.
std::string BindRefusal(const extender::BindingArgs& args, const FilterAnswers::Check& check,
                        bool* already_bound) {
  using Verdict = FilterAnswers::Verdict;
  const std::string key = args.PodKey();
  switch (check.verdict) {
    case Verdict::kOffered:
      return "";
    case Verdict::kAlreadyBound:
      *already_bound = true;
      return "";
    case Verdict::kBoundElsewhere:
      return "pod " + key + " is already bound to node " + check.bound_node + ", not " + args.node;
    case Verdict::kNotOffered:
      return "node " + args.node + " was not offered by the last filter of pod " + key +
             "; it must be filtered again";
    case Verdict::kOtherUid:
      return "pod " + key + " (uid " + args.pod_uid +
             ") is not the pod its last filter was for; it must be filtered again";
    case Verdict::kNoAnswer:
      break;
  }
  return "pod " + key +
         " has no filter answer here (never filtered by this replica, or too long "
         "ago); it must be filtered again";
}

}  // namespace

size_t ExtenderVerbs::candidate_limit() const {
  return std::max(2 * view_.known_nodes(), kMinCandidateLimit);
}

size_t ExtenderVerbs::DecodeBuffersRetainedOnThisThread() {
  return ArgsDecoder().retained_capacity();
}

// ---- filter -------------------------------------------------------------------------------

std::string ExtenderVerbs::Filter(std::string_view body) {
  const auto start = std::chrono::steady_clock::now();
  ServiceMetrics& metrics = view_.metrics();
  extender::FilterResult result;
  auto args = ArgsDecoder().Decode(body, candidate_limit());
  if (!args.ok()) {
    result.error = args.error().message;
    metrics.FilterDone("error", SecondsSince(start));
    return extender::EncodeFilterResult(result);
  }
  auto pod = codec::DecodePod(args->pod);
  if (!pod.ok()) {
    result.error = "ExtenderArgs.Pod: " + pod.error().message;
    metrics.FilterDone("error", SecondsSince(start));
    return extender::EncodeFilterResult(result);
  }
  std::string why;
  if (!view_.WaitReady(&why)) {
    result.error = why;
    metrics.FilterDone("error", SecondsSince(start));
    return extender::EncodeFilterResult(result);
  }
  // Names as sent (nodeCacheCapable), not copied; node objects give theirs.
  std::vector<std::string> names_of_nodes;
  if (!args->node_names) names_of_nodes = extender::CandidateNames(*args);
  const std::vector<std::string>& candidates =
      args->node_names ? *args->node_names : names_of_nodes;
  const bool have_candidates = args->node_names.has_value() || args->nodes.has_value();
  ClusterView::Scheduled scheduled = view_.Schedule(*pod, have_candidates ? &candidates : nullptr);
  const sched::Decision& decision = scheduled.decision;
  result = FilterAnswer(*args, candidates, decision);
  const PodRef ref{pod->ns, pod->name, pod->uid};
  std::string outcome;
  switch (decision.outcome) {
    case sched::Outcome::kPassthrough:
      outcome = "passthrough";
      break;
    case sched::Outcome::kInvalidRequest:
      outcome = "invalid";
      writer_.RecordEvent(ref, true, "FilteringFailed", decision.message);
      break;
    case sched::Outcome::kUnschedulable: {
      outcome = "unschedulable";
      writer_.RecordEvent(ref, true, "FilteringFailed", FailureSummary(decision.failed_nodes));
      std::set<std::string> words;
      for (const auto& [node, status] : decision.failed_nodes) {
        sched::ForEachReasonWord(status, [&](std::string_view word) { words.emplace(word); });
      }
      metrics.Unschedulable(words);
      break;
    }
    case sched::Outcome::kScheduled: {
      Status written = view_.options().write_placement_in_bind
                           ? Status::Ok()
                           : writer_.PatchPodAnnotations(ref, PlacementAnnotations(decision));
      if (!written.ok()) {
        // Nothing may stay reserved for a placement the pod does not carry.
        view_.ReleaseReservation(ref.Key(), scheduled.serial);
        result = {};
        result.error = "writing the placement of pod " + ref.Key() + ": " + written.message();
        outcome = "error";
        spdlog::warn("filter {}: {}", ref.Key(), result.error);
      } else {
        outcome = "scheduled";
        writer_.RecordEvent(ref, false, "FilteringSucceed",
                            "Successfully filtered to node " + decision.node);
      }
      break;
    }
  }
  metrics.FilterDone(outcome, SecondsSince(start));
  return extender::EncodeFilterResult(result);
}

// ---- bind ---------------------------------------------------------------------------------

std::string ExtenderVerbs::Bind(std::string_view body) {
  const auto start = std::chrono::steady_clock::now();
  ServiceMetrics& metrics = view_.metrics();
  auto args = extender::DecodeBindingArgs(body);
  if (!args.ok()) {
    metrics.BindDone("error", SecondsSince(start));
    return extender::EncodeBindingResult(args.error().message);
  }
  const std::string key = args->PodKey();
  const PodRef ref{args->pod_namespace, args->pod_name, args->pod_uid};
  std::string why;
  if (!view_.WaitReady(&why)) {
    metrics.BindDone("error", SecondsSince(start));
    return extender::EncodeBindingResult(why);
  }
  // Nothing is written for a bind the pod's last filter did not offer, or for a pod bound
  // already.
  ClusterView::BindStart begun = view_.StartBind(key, args->pod_uid, args->node);
  bool already_bound = false;
  std::string refusal = BindRefusal(*args, begun.answer, &already_bound);
  if (begun.does_not_fit_here) {
    refusal = "pod " + key +
              " was not filtered by this replica (a restart or a new leader since) " +
              "and no longer fits on node " + args->node + "; it must be filtered again";
  }
  if (already_bound) {
    metrics.BindDone("bound", SecondsSince(start));
    return extender::EncodeBindingResult("");
  }
  if (!refusal.empty()) {
    spdlog::debug("bind {} to {}: {}", key, args->node, refusal);
    metrics.BindDone("error", SecondsSince(start));
    return extender::EncodeBindingResult(refusal);
  }
  if (begun.placed_here) {
    spdlog::info("bind {} to {}: no filter here had placed it (restart or new leader); placed now",
                 key, args->node);
    metrics.BindPlacedHere();
  }
  auto& ticket = *begun.ticket;  // started: the last filter offered this node
  if (!ticket.ok()) {
    metrics.BindDone("error", SecondsSince(start));
    return extender::EncodeBindingResult(ticket.error().message);
  }
  const uint64_t serial = ticket->serial;
  const bool reserved = ticket->reserved;
  AnnotationChanges placement = std::move(ticket->to_write);
  auto fail = [&](const std::string& message) {
    if (reserved) view_.ReleaseReservation(key, serial);
    writer_.RecordEvent(ref, true, "BindingFailed", message);
    metrics.BindDone("error", SecondsSince(start));
    spdlog::warn("bind {} to {}: {}", key, args->node, message);
    return extender::EncodeBindingResult(message);
  };
  const bool lock_node = view_.options().hami_node_lock && reserved;
  if (lock_node) {
    if (Status s = writer_.LockNode(args->node, ref); !s.ok()) return fail(s.message());
  }
  auto unlock = [&] {
    if (lock_node) (void)writer_.UnlockNode(args->node, ref);
  };
  BindingAnnotations on_binding;
  if (reserved) {
    AnnotationChanges phase = std::move(placement);
    phase[std::string(ann::kBindPhase)] = "allocating";
    phase[std::string(ann::kBindTime)] = std::to_string(view_.clocks().unix_seconds());
    // One write: the Binding carries the annotations, which the API server sets on the pod with
    // its node, so the pod is never bound without its placement. Only removing a key (one an
    // earlier placement of the pod left) takes a patch of its own first.
    const bool removes =
        std::any_of(phase.begin(), phase.end(), [](const auto& change) { return !change.second; });
    if (removes) {
      if (Status s = writer_.PatchPodAnnotations(ref, phase); !s.ok()) {
        unlock();
        return fail(s.message());
      }
    } else {
      for (auto& [name, value] : phase) on_binding.emplace(name, std::move(*value));
    }
  }
  if (Status s = writer_.BindPod(ref, args->node, on_binding); !s.ok()) {
    unlock();
    return fail(s.message());
  }
  view_.FinishBind(key, args->pod_uid, args->node, serial);
  writer_.RecordEvent(ref, false, "BindingSucceed",
                      "Successfully binding node [" + args->node + "] to " + key);
  metrics.BindDone("bound", SecondsSince(start));
  return extender::EncodeBindingResult("");
}

// ---- prioritize ---------------------------------------------------------------------------

std::string ExtenderVerbs::Prioritize(std::string_view body) {
  auto args = ArgsDecoder().Decode(body, candidate_limit());
  std::vector<extender::HostPriority> out;
  if (!args.ok()) return extender::EncodeHostPriorityList(out);
  auto pod = codec::DecodePod(args->pod);
  // Names as sent (nodeCacheCapable), not copied, as in the filter.
  std::vector<std::string> names_of_nodes;
  if (!args->node_names) names_of_nodes = extender::CandidateNames(*args);
  const std::vector<std::string>& candidates =
      args->node_names ? *args->node_names : names_of_nodes;
  std::string chosen;
  if (pod.ok()) {
    auto admitted = sched::ApplyAdmissionDefaults(*pod, view_.config().nvidia);
    if (admitted.ok()) {
      // The node filter would choose scores highest: its own reservation (the filter's) is not
      // in its way, so a pod scored after its filter gets the filter's node.
      sched::Decision d = view_.Preview(admitted->pod, &candidates);
      if (d.scheduled()) chosen = d.node;
    }
  }
  for (const auto& n : candidates) {
    out.push_back({n, n == chosen ? extender::kMaxPriority : 0});
  }
  return extender::EncodeHostPriorityList(out);
}

// ---- webhook ------------------------------------------------------------------------------

std::string ExtenderVerbs::Webhook(std::string_view body) {
  ServiceMetrics& metrics = view_.metrics();
  auto request = extender::DecodeAdmissionReview(body);
  if (!request.ok()) {
    metrics.WebhookDone("error");
    return extender::EncodeAdmissionError("", "", request.error().message);
  }
  std::string ns = request->ns;
  if (ns.empty()) {
    const Json* meta = codec::FindKey(request->object, "metadata");
    const Json* n = meta != nullptr ? codec::FindKey(*meta, "namespace") : nullptr;
    ns = n != nullptr && n->is_string() ? n->get<std::string>() : "default";
  }
  const std::optional<state::QuotaHeadroom> quota = view_.QuotaHeadroom(ns);
  // The cluster's MIG GPU models, for the near-miss warnings: read only for an admitted GPU pod.
  const extender::MigKindsSource mig_kinds = [this] {
    std::vector<sched::MigGpuKind> kinds;
    view_.WithState([&](const state::ClusterState& s) { kinds = sched::MigGpuKindsOf(s); });
    return kinds;
  };
  extender::AdmissionVerdict verdict = extender::ReviewPod(request->object, view_.options().webhook,
                                                           view_.config().nvidia, quota, mig_kinds);
  metrics.WebhookDone(!verdict.allowed ? "denied" : verdict.patch.empty() ? "allowed" : "patched");
  if (!verdict.allowed)
    spdlog::info("webhook denied {}: {}", ObjectName(request->object), verdict.message);
  return extender::EncodeAdmissionReview(*request, verdict);
}

}  // namespace tessera::scheduler
