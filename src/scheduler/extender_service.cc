#include "scheduler/extender_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <utility>

#include "core/codec/k8s_objects.h"
#include "core/extender/extender_args_decoder.h"
#include "core/model/annotations.h"
#include "core/sched/admission.h"
#include "core/sched/explain.h"
#include "scheduler/ui_state.h"

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

std::string Describe(const Json& obj) {
  const Json* meta = codec::FindKey(obj, "metadata");
  if (meta == nullptr) return "(object without metadata)";
  std::string out;
  if (const Json* ns = codec::FindKey(*meta, "namespace"); ns != nullptr && ns->is_string()) {
    out = ns->get<std::string>() + "/";
  }
  if (const Json* name = codec::FindKey(*meta, "name"); name != nullptr && name->is_string()) {
    out += name->get<std::string>();
  }
  return out;
}

// FilteringFailed's message in HAMi's shape: "<n> nodes <Reason>(<nodes>)" per reason.
// "2/2 CardInsufficientMemory, 1/2 CardNotHealth" -> {CardInsufficientMemory, CardNotHealth}.
std::set<std::string> ReasonWords(const std::string& reason) {
  std::set<std::string> words;
  size_t pos = 0;
  while (pos < reason.size()) {
    size_t end = reason.find(", ", pos);
    std::string part = reason.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (size_t sp = part.find(' '); sp != std::string::npos && part.find('/') < sp) {
      part = part.substr(sp + 1);
    }
    words.insert(part);
    if (end == std::string::npos) break;
    pos = end + 2;
  }
  return words;
}

std::string FailureSummary(const std::map<std::string, std::string>& failed) {
  std::map<std::string, std::vector<std::string>> by_reason;
  for (const auto& [node, reason] : failed) {
    // Each reason word counts once per node.
    for (const auto& w : ReasonWords(reason)) by_reason[w].push_back(node);
  }
  std::string out;
  for (const auto& [reason, nodes] : by_reason) {
    if (!out.empty()) out += "; ";
    out += std::to_string(nodes.size()) + " nodes " + reason + "(";
    for (size_t i = 0; i < nodes.size(); ++i) out += (i ? "," : "") + nodes[i];
    out += ")";
  }
  return out;
}

// Decodes a (re)list; an object that does not decode is counted, logged and skipped.
template <class Decode>
auto DecodeAll(const std::vector<Json>& objects, const std::string& kind, Decode decode,
               ServiceMetrics& metrics) {
  std::vector<std::decay_t<decltype(decode(objects.front()).value())>> out;
  for (const auto& o : objects) {
    auto d = decode(o);
    if (!d.ok()) {
      metrics.DecodeError(kind);
      spdlog::warn("skipping {} {}: {}", kind, Describe(o), d.error().message);
      continue;
    }
    out.push_back(std::move(d.value()));
  }
  return out;
}

AnnotationChanges FilterAnnotations(const sched::Decision& decision) {
  AnnotationChanges changes;
  for (const auto& [k, v] : decision.annotations) changes[k] = v;
  // A merge patch only sets keys: clear what a previous placement of this pod may have left
  // (HAMi leaves a stale MIG reservation behind, hami-protocol.md 13.5).
  const std::string mig(ann::kMigAllocations);
  if (changes.count(mig) == 0) changes[mig] = std::nullopt;
  changes[std::string(ann::kBindPhase)] = std::nullopt;
  changes[std::string(ann::kBindTime)] = std::nullopt;
  return changes;
}

}  // namespace

ExtenderService::ExtenderService(config::SchedulerConfig config, ServiceOptions options,
                                 ClusterWriter& writer, ServiceClocks clocks)
    : config_(config),
      options_(std::move(options)),
      writer_(writer),
      clocks_(std::move(clocks)),
      state_(std::move(config)),
      scheduler_(state_, options_.policy),
      reservations_(state_, options_.reservation_timeout),
      filter_only_(options_.max_filter_only_pods),
      // A restarted scheduler counts /ui versions from 1 again: its start time tells them apart.
      ui_etag_prefix_(std::to_string(clocks_.steady().time_since_epoch().count())),
      liveness_(config_.nvidia.resource_count_name, options_.node_liveness_grace) {
  scheduler_.set_filter_runner(options_.filter_runner);
}

// ---- readiness ----------------------------------------------------------------------------

void ExtenderService::SetSynced(bool synced) {
  {
    std::lock_guard lock(mu_);
    synced_ = synced;
  }
  ready_cv_.notify_all();
}

void ExtenderService::SetLeader(bool leader) {
  {
    std::lock_guard lock(mu_);
    leader_ = leader;
  }
  ready_cv_.notify_all();
}

bool ExtenderService::Ready(std::string* why) const {
  std::lock_guard lock(mu_);
  if (!synced_) {
    if (why) *why = "the cluster view has not synced yet";
    return false;
  }
  if (!leader_) {
    if (why) *why = "this replica is not the leader";
    return false;
  }
  return true;
}

bool ExtenderService::WaitReady(std::string* why) {
  std::unique_lock lock(mu_);
  // Waiting helps only a replica that is starting up; a follower answers at once, so that a
  // misrouted call does not stall kube-scheduler.
  if (leader_) ready_cv_.wait_for(lock, options_.ready_wait, [&] { return synced_ || !leader_; });
  if (synced_ && leader_) return true;
  *why = !synced_ ? "tessera is not ready: the cluster view has not synced yet"
                  : "tessera is not ready: this replica is not the leader";
  return false;
}

// ---- filter -------------------------------------------------------------------------------

size_t ExtenderService::candidate_limit() const {
  return std::max(2 * known_nodes_.load(), kMinCandidateLimit);
}

size_t ExtenderService::DecodeBuffersRetainedOnThisThread() {
  return ArgsDecoder().retained_capacity();
}

std::string ExtenderService::Filter(std::string_view body) {
  const auto start = std::chrono::steady_clock::now();
  extender::FilterResult result;
  auto args = ArgsDecoder().Decode(body, candidate_limit());
  if (!args.ok()) {
    result.error = args.error().message;
    metrics_.FilterDone("error", SecondsSince(start));
    return extender::EncodeFilterResult(result);
  }
  auto pod = codec::DecodePod(args->pod);
  if (!pod.ok()) {
    result.error = "ExtenderArgs.Pod: " + pod.error().message;
    metrics_.FilterDone("error", SecondsSince(start));
    return extender::EncodeFilterResult(result);
  }
  std::string why;
  if (!WaitReady(&why)) {
    result.error = why;
    metrics_.FilterDone("error", SecondsSince(start));
    return extender::EncodeFilterResult(result);
  }
  uint64_t serial = 0;
  sched::Decision decision;
  {
    std::lock_guard lock(mu_);
    result = FilterLocked(*args, *pod, &serial, &decision);
  }
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
      for (const auto& [node, reason] : decision.failed_nodes) words.merge(ReasonWords(reason));
      metrics_.Unschedulable(words);
      break;
    }
    case sched::Outcome::kScheduled: {
      Status written = options_.write_placement_in_bind
                           ? Status::Ok()
                           : writer_.PatchPodAnnotations(ref, FilterAnnotations(decision));
      if (!written.ok()) {
        // Nothing may stay reserved for a placement the pod does not carry.
        ReleaseIfSerial(ref.Key(), serial);
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
  metrics_.FilterDone(outcome, SecondsSince(start));
  return extender::EncodeFilterResult(result);
}

extender::FilterResult ExtenderService::FilterLocked(const extender::ExtenderArgs& args,
                                                     const model::Pod& pod_in, uint64_t* serial,
                                                     sched::Decision* decision) {
  extender::FilterResult result;
  NamedByFilterLocked(pod_in);
  if (pod_in.node_name.empty()) unbound_[pod_in.Key()] = pod_in;
  // Names as sent (nodeCacheCapable), not copied; node objects give theirs.
  std::vector<std::string> names_of_nodes;
  if (!args.node_names) names_of_nodes = extender::CandidateNames(args);
  const std::vector<std::string>& candidates = args.node_names ? *args.node_names : names_of_nodes;
  const bool have_candidates = args.node_names.has_value() || args.nodes.has_value();
  // Pods created without the webhook get the same resource defaults it would have applied.
  auto admitted = sched::ApplyAdmissionDefaults(pod_in, config_.nvidia);
  if (!admitted.ok()) {
    decision->outcome = sched::Outcome::kInvalidRequest;
    decision->message = "pod " + pod_in.Key() + ": " + admitted.error().message;
  } else {
    *decision = scheduler_.Schedule(admitted->pod, have_candidates ? &candidates : nullptr,
                                    clocks_.unix_seconds());
  }
  if (decision->scheduled() || decision->passthrough()) {
    waiting_.erase(pod_in.Key());
  } else {
    waiting_[pod_in.Key()] = decision->message;
  }
  if (decision->outcome == sched::Outcome::kUnschedulable && pod_in.node_name.empty()) {
    refused_.Refused(pod_in.Key(), have_candidates ? &candidates : nullptr);
  } else {
    refused_.Forget(pod_in.Key());
  }
  RecordAnswerLocked(pod_in, *decision, have_candidates ? &candidates : nullptr);
  if (decision->passthrough()) {
    reservations_.AssumePassthrough(pod_in.Key());
    result.node_names = args.node_names;
    result.nodes = args.nodes;
    return result;
  }
  if (decision->invalid_request()) {
    // Preemption cannot fix a malformed request: every node is unresolvable, with the reason.
    for (const auto& n : candidates) result.failed_and_unresolvable[n] = decision->message;
    if (candidates.empty()) result.error = decision->message;
    return result;
  }
  if (!decision->scheduled()) {
    // Nodes where evicting pods cannot make room go where kube-scheduler's preemption skips them
    // (HAMi puts every node in FailedNodes, so preemption may evict pods for nothing).
    for (const auto& [node, reason] : decision->failed_nodes) {
      (decision->unresolvable_nodes.contains(node) ? result.failed_and_unresolvable
                                                   : result.failed_nodes)[node] = reason;
    }
    if (result.failed_nodes.empty() && result.failed_and_unresolvable.empty()) {
      // No candidate at all: kube-scheduler needs a reason somewhere.
      result.error = decision->message.empty() ? "no nodes to choose from" : decision->message;
    }
    return result;
  }
  *serial = reservations_.Assume(
      pod_in, decision->node, clocks_.steady(),
      options_.write_placement_in_bind ? FilterAnnotations(*decision) : AnnotationChanges{});
  metrics_.SetPending(reservations_.awaiting_bind());
  if (args.node_names || !args.nodes) {
    result.node_names = std::vector<std::string>{decision->node};
  } else {
    for (const auto& n : *args.nodes) {
      const Json* meta = codec::FindKey(n, "metadata");
      const Json* name = meta != nullptr ? codec::FindKey(*meta, "name") : nullptr;
      if (name != nullptr && name->is_string() && name->get<std::string>() == decision->node) {
        result.nodes = std::vector<Json>{n};
      }
    }
  }
  return result;
}

void ExtenderService::NamedByFilterLocked(const model::Pod& pod) {
  const std::string key = pod.Key();
  // Pods the feed shows unbound are in unbound_ and not filter-only; any other is only this
  // request's word (or not yet seen by the informers: they forget it when they show it).
  auto fed = unbound_.find(key);
  if (fed != unbound_.end() && fed->second.uid == pod.uid && !filter_only_.Contains(key)) return;
  for (const std::string& dropped : filter_only_.Named(key, clocks_.steady())) {
    ForgetFilterOnlyPodLocked(dropped);
  }
}

void ExtenderService::ForgetFilterOnlyPodLocked(const std::string& key) {
  filter_only_.Forget(key);
  unbound_.erase(key);
  waiting_.erase(key);
  refused_.Forget(key);
  filter_answers_.Forget(key);
  reservations_.DropPassthrough(key);
}

void ExtenderService::RecordAnswerLocked(const model::Pod& pod, const sched::Decision& decision,
                                         const std::vector<std::string>* candidates) {
  const std::string key = pod.Key();
  if (decision.scheduled()) {
    filter_answers_.Placed(key, pod.uid, decision.node);
  } else if (decision.passthrough() && candidates != nullptr) {
    filter_answers_.PassedThrough(key, pod.uid, *candidates);
  } else {
    filter_answers_.Forget(key);  // no node offered
  }
}

void ExtenderService::ReleaseIfSerial(const std::string& key, uint64_t serial) {
  std::lock_guard lock(mu_);
  if (reservations_.Undo(key, serial)) {
    filter_answers_.Forget(key);  // the placement it offered is gone: filter again
    metrics_.SetPending(reservations_.awaiting_bind());
    refused_.ViewChanged();
  }
}

// ---- bind ---------------------------------------------------------------------------------

std::string ExtenderService::Bind(std::string_view body) {
  const auto start = std::chrono::steady_clock::now();
  auto args = extender::DecodeBindingArgs(body);
  if (!args.ok()) {
    metrics_.BindDone("error", SecondsSince(start));
    return extender::EncodeBindingResult(args.error().message);
  }
  const std::string key = args->PodKey();
  const PodRef ref{args->pod_namespace, args->pod_name, args->pod_uid};
  std::string why;
  if (!WaitReady(&why)) {
    metrics_.BindDone("error", SecondsSince(start));
    return extender::EncodeBindingResult(why);
  }
  uint64_t serial = 0;
  bool reserved = false;
  AnnotationChanges placement;
  {
    std::lock_guard lock(mu_);
    // Nothing is written for a bind the pod's last filter did not offer, or for a pod bound
    // already.
    bool already_bound = false;
    const std::string refusal = BindRefusalLocked(*args, &already_bound);
    if (already_bound) {
      metrics_.BindDone("bound", SecondsSince(start));
      return extender::EncodeBindingResult("");
    }
    if (!refusal.empty()) {
      spdlog::debug("bind {} to {}: {}", key, args->node, refusal);
      metrics_.BindDone("error", SecondsSince(start));
      return extender::EncodeBindingResult(refusal);
    }
    auto ticket = reservations_.BeginBind(key, args->node);
    if (!ticket.ok()) {
      metrics_.BindDone("error", SecondsSince(start));
      return extender::EncodeBindingResult(ticket.error().message);
    }
    serial = ticket->serial;
    reserved = ticket->reserved;
    placement = std::move(ticket->to_write);
  }
  auto fail = [&](const std::string& message) {
    if (reserved) ReleaseIfSerial(key, serial);
    writer_.RecordEvent(ref, true, "BindingFailed", message);
    metrics_.BindDone("error", SecondsSince(start));
    spdlog::warn("bind {} to {}: {}", key, args->node, message);
    return extender::EncodeBindingResult(message);
  };
  const bool lock_node = options_.hami_node_lock && reserved;
  if (lock_node) {
    if (Status s = writer_.LockNode(args->node, ref); !s.ok()) return fail(s.message());
  }
  if (reserved) {
    AnnotationChanges phase = std::move(placement);
    phase[std::string(ann::kBindPhase)] = "allocating";
    phase[std::string(ann::kBindTime)] = std::to_string(clocks_.unix_seconds());
    if (Status s = writer_.PatchPodAnnotations(ref, phase); !s.ok()) {
      if (lock_node) (void)writer_.UnlockNode(args->node, ref);
      return fail(s.message());
    }
  }
  if (Status s = writer_.BindPod(ref, args->node); !s.ok()) {
    if (lock_node) (void)writer_.UnlockNode(args->node, ref);
    return fail(s.message());
  }
  {
    std::lock_guard lock(mu_);
    reservations_.BindDone(key, serial);
    filter_answers_.Bound(key, args->pod_uid, args->node);
    metrics_.SetPending(reservations_.awaiting_bind());
  }
  writer_.RecordEvent(ref, false, "BindingSucceed",
                      "Successfully binding node [" + args->node + "] to " + key);
  metrics_.BindDone("bound", SecondsSince(start));
  return extender::EncodeBindingResult("");
}

std::string ExtenderService::BindRefusalLocked(const extender::BindingArgs& args,
                                               bool* already_bound) const {
  using Verdict = FilterAnswers::Verdict;
  const std::string key = args.PodKey();
  const FilterAnswers::Check check = filter_answers_.ForBind(key, args.pod_uid, args.node);
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

// ---- prioritize ---------------------------------------------------------------------------

std::string ExtenderService::Prioritize(std::string_view body) {
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
    auto admitted = sched::ApplyAdmissionDefaults(*pod, config_.nvidia);
    if (admitted.ok()) {
      std::lock_guard lock(mu_);
      // The node filter would choose scores highest: its own reservation (the filter's) is not
      // in its way, so a pod scored after its filter gets the filter's node.
      sched::Decision d = scheduler_.Preview(admitted->pod, &candidates, clocks_.unix_seconds());
      if (d.scheduled()) chosen = d.node;
    }
  }
  for (const auto& n : candidates) {
    out.push_back({n, n == chosen ? extender::kMaxPriority : 0});
  }
  return extender::EncodeHostPriorityList(out);
}

// ---- webhook ------------------------------------------------------------------------------

std::string ExtenderService::Webhook(std::string_view body) {
  auto request = extender::DecodeAdmissionReview(body);
  if (!request.ok()) {
    metrics_.WebhookDone("error");
    return extender::EncodeAdmissionError("", "", request.error().message);
  }
  std::optional<state::QuotaHeadroom> quota;
  {
    std::string ns = request->ns;
    if (ns.empty()) {
      const Json* meta = codec::FindKey(request->object, "metadata");
      const Json* n = meta != nullptr ? codec::FindKey(*meta, "namespace") : nullptr;
      ns = n != nullptr && n->is_string() ? n->get<std::string>() : "default";
    }
    std::lock_guard lock(mu_);
    quota = state_.quotas().HeadroomFor(ns);
  }
  extender::AdmissionVerdict verdict =
      extender::ReviewPod(request->object, options_.webhook, config_.nvidia, quota);
  metrics_.WebhookDone(!verdict.allowed ? "denied" : verdict.patch.empty() ? "allowed" : "patched");
  if (!verdict.allowed)
    spdlog::info("webhook denied {}: {}", Describe(request->object), verdict.message);
  return extender::EncodeAdmissionReview(*request, verdict);
}

// ---- cluster feed -------------------------------------------------------------------------

void ExtenderService::UpsertNodeModel(const model::Node& node) {
  std::lock_guard lock(mu_);
  UpsertNodeLocked(node);
}

namespace {
bool Selected(const model::Node& node, const std::map<std::string, std::string>& selector) {
  for (const auto& [key, value] : selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  return true;
}
}  // namespace

std::string ExtenderService::BlockReasonLocked(const std::string& node) const {
  if (unselected_.count(node) > 0) return "node unregistered";
  if (not_live_.count(node) > 0) return liveness_.Verdict(node, clocks_.steady());
  return "";
}

void ExtenderService::UpsertNodeLocked(const model::Node& node) {
  if (Selected(node, options_.node_selector)) {
    unselected_.erase(node.name);
  } else {
    unselected_.insert(node.name);
  }
  liveness_.Observe(node, clocks_.steady());
  // A node whose plugin came back is live at once; one that went away waits for the next pass.
  if (!liveness_.ZeroSince(node.name)) not_live_.erase(node.name);
  const state::NodeState* before = state_.node(node.name);
  const bool was_usable = before != nullptr && before->usable();
  const uint64_t signature = before != nullptr ? before->signature : 0;
  state_.SetNodeBlocked(node.name, BlockReasonLocked(node.name));
  state_.UpsertNode(node);
  known_nodes_ = state_.nodes().size();
  const state::NodeState* after = state_.node(node.name);
  // A heartbeat changes neither: only a node that may take more than before counts.
  if (after != nullptr && after->usable() && (!was_usable || after->signature != signature)) {
    refused_.ViewChanged();
  }
}

size_t ExtenderService::CheckNodeLiveness() {
  std::vector<std::pair<std::string, std::string>> changed;  // node, new reason ("" = live)
  size_t dead = 0;
  {
    std::lock_guard lock(mu_);
    const auto now = clocks_.steady();
    // Only nodes seen at 0, or marked before, can change (cheap at any cluster size).
    std::set<std::string> candidates = not_live_;
    for (const auto& [name, since] : liveness_.zero_since()) candidates.insert(name);
    for (const auto& name : candidates) {
      if (state_.node(name) == nullptr) continue;
      const bool was = not_live_.count(name) > 0;
      const bool is = !liveness_.Verdict(name, now).empty();
      dead += is ? 1 : 0;
      if (was != is) changed.emplace_back(name, is ? liveness_.Verdict(name, now) : "");
    }
    for (const auto& [name, reason] : changed) {
      if (reason.empty()) {
        not_live_.erase(name);
        refused_.ViewChanged();  // kube-scheduler saw the node's update before the grace ended
      } else {
        not_live_.insert(name);
      }
      state_.SetNodeBlocked(name, BlockReasonLocked(name));
    }
  }
  for (const auto& [name, reason] : changed) {
    if (reason.empty()) {
      spdlog::info("node {}: its device plugin is back; it takes GPU pods again", name);
    } else {
      spdlog::warn("node {}: {}; no new GPU pods go there until it is back", name, reason);
    }
  }
  return dead;
}

void ExtenderService::UpsertNode(const Json& node) {
  auto decoded = codec::DecodeNode(node);
  if (!decoded.ok()) {
    metrics_.DecodeError("node");
    spdlog::warn("skipping node {}: {}", Describe(node), decoded.error().message);
    return;
  }
  UpsertNodeModel(*decoded);
}

void ExtenderService::DeleteNode(const Json& node) {
  auto decoded = codec::DecodeNode(node);
  std::string name = decoded.ok() ? decoded->name : Describe(node);
  std::lock_guard lock(mu_);
  RemoveNodeLocked(name);
}

void ExtenderService::RemoveNodeLocked(const std::string& name) {
  state_.RemoveNode(name);
  known_nodes_ = state_.nodes().size();
  state_.SetNodeBlocked(name, "");
  liveness_.Forget(name);
  unselected_.erase(name);
  not_live_.erase(name);
}

void ExtenderService::ReplaceNodes(const std::vector<Json>& nodes) {
  std::vector<model::Node> decoded = DecodeAll(nodes, "node", codec::DecodeNode, metrics_);
  std::lock_guard lock(mu_);
  std::set<std::string> present;
  for (const auto& n : decoded) {
    present.insert(n.name);
    UpsertNodeLocked(n);
  }
  std::vector<std::string> gone;
  for (const auto& [name, ns] : state_.nodes()) {
    if (present.count(name) == 0) gone.push_back(name);
  }
  for (const auto& name : gone) RemoveNodeLocked(name);
}

void ExtenderService::UpsertQuotaModel(const model::ResourceQuota& quota) {
  std::vector<std::string> problems;
  {
    std::lock_guard lock(mu_);
    problems = state_.UpsertQuota(quota);
    refused_.ViewChanged();  // kube-scheduler does not watch ResourceQuotas
  }
  for (const auto& p : problems) {
    metrics_.DecodeError("resourcequota");
    spdlog::warn("{}", p);
  }
}

void ExtenderService::UpsertQuota(const Json& quota) {
  auto decoded = codec::DecodeResourceQuota(quota);
  if (!decoded.ok()) {
    metrics_.DecodeError("resourcequota");
    spdlog::warn("skipping resourcequota {}: {}", Describe(quota), decoded.error().message);
    return;
  }
  UpsertQuotaModel(*decoded);
}

void ExtenderService::DeleteQuota(const Json& quota) {
  auto decoded = codec::DecodeResourceQuota(quota);
  if (!decoded.ok()) return;
  std::lock_guard lock(mu_);
  state_.RemoveQuota(decoded->ns, decoded->name);
  refused_.ViewChanged();
}

void ExtenderService::ReplaceQuotas(const std::vector<Json>& quotas) {
  std::vector<model::ResourceQuota> decoded =
      DecodeAll(quotas, "resourcequota", codec::DecodeResourceQuota, metrics_);
  std::set<std::pair<std::string, std::string>> present;
  for (const auto& q : decoded) {
    present.emplace(q.ns, q.name);
    UpsertQuotaModel(q);
  }
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, std::string>> gone;
  for (const auto& [ns, entry] : state_.quotas().namespaces()) {
    for (const auto& [name, limits] : entry.quotas) {
      if (present.count({ns, name}) == 0) gone.emplace_back(ns, name);
    }
  }
  for (const auto& [ns, name] : gone) state_.RemoveQuota(ns, name);
  if (!gone.empty()) refused_.ViewChanged();
}

void ExtenderService::UpsertPodModel(const model::Pod& pod) {
  std::lock_guard lock(mu_);
  ApplyPodLocked(pod);
}

void ExtenderService::UpsertPod(const Json& pod) {
  auto decoded = codec::DecodePod(pod);
  if (!decoded.ok()) {
    metrics_.DecodeError("pod");
    spdlog::warn("skipping pod {}: {}", Describe(pod), decoded.error().message);
    return;
  }
  UpsertPodModel(*decoded);
}

void ExtenderService::DeletePod(const Json& pod) {
  auto decoded = codec::DecodePod(pod);
  const std::string key = decoded.ok() ? decoded->Key() : Describe(pod);
  std::lock_guard lock(mu_);
  ForgetPodLocked(key);
}

void ExtenderService::ReplacePods(const std::vector<Json>& pods) {
  std::vector<model::Pod> decoded = DecodeAll(pods, "pod", codec::DecodePod, metrics_);
  std::lock_guard lock(mu_);
  std::set<std::string> present;
  for (const auto& p : decoded) {
    present.insert(p.Key());
    ApplyPodLocked(p);
  }
  std::vector<std::string> gone;
  for (const auto& [key, r] : state_.pods()) {
    if (present.count(key) == 0) gone.push_back(key);
  }
  for (const auto& key : gone) ForgetPodLocked(key);
  // Answers of pods the feed no longer shows; those only filters named expire on their own.
  filter_answers_.ForgetIf([&](const std::string& key) {
    return present.count(key) == 0 && !filter_only_.Contains(key);
  });
  std::erase_if(unbound_, [&](const auto& entry) { return present.count(entry.first) == 0; });
  std::erase_if(waiting_, [&](const auto& entry) { return unbound_.count(entry.first) == 0; });
  refused_.KeepOnly(waiting_);
}

void ExtenderService::ForgetPodLocked(const std::string& key) {
  std::optional<state::PodReservation> gone = reservations_.Forget(key);
  if (gone) refused_.ViewChanged();
  ForgetPodViewsLocked(key, gone ? gone->uid : "");
  metrics_.SetPending(reservations_.awaiting_bind());
}

void ExtenderService::ForgetPodViewsLocked(const std::string& key, const std::string& held_uid) {
  if (!held_uid.empty()) {
    std::erase_if(reported_problems_,
                  [&](const std::string& p) { return p.rfind(held_uid + "/", 0) == 0; });
  }
  unbound_.erase(key);
  waiting_.erase(key);
  refused_.Forget(key);
  filter_only_.Forget(key);
  filter_answers_.Forget(key);
}

void ExtenderService::ApplyPodLocked(const model::Pod& pod) {
  using Adoption = state::ReservationCache::Adoption;
  const std::string key = pod.Key();
  const bool held = state_.pod(key) != nullptr;
  state::ReservationCache::Observed seen = reservations_.Observe(pod, clocks_.steady());
  metrics_.SetPending(reservations_.awaiting_bind());
  // A pod that finished, was replaced or gave its devices back freed them.
  if (seen.forgotten || (held && state_.pod(key) == nullptr)) refused_.ViewChanged();
  if (seen.forgotten || seen.adoption == Adoption::kGone) {
    ForgetPodViewsLocked(key, seen.forgotten ? seen.forgotten->uid : "");
  }
  if (seen.adoption == Adoption::kGone) return;
  filter_only_.Forget(key);  // the feed shows it: kept until the feed deletes it
  if (!pod.uid.empty()) filter_answers_.ForgetOtherUid(key, pod.uid);
  if (pod.node_name.empty()) {
    unbound_[key] = pod;
  } else {
    unbound_.erase(key);
    waiting_.erase(key);
    refused_.Forget(key);
    filter_answers_.Bound(key, pod.uid, pod.node_name);
    reservations_.DropPassthrough(key);
  }
  // Placed by a filter before a restart (or by another replica): bind may take it there.
  if (seen.adoption == Adoption::kUnbound && !seen.placed_node.empty() &&
      !filter_answers_.Contains(key)) {
    filter_answers_.Placed(key, pod.uid, seen.placed_node);
  }
  if (seen.adoption == Adoption::kUnreadable) {
    metrics_.DecodeError("pod");
    spdlog::warn("pod {}: {}", key, seen.error);
    return;
  }
  if (!seen.problem.empty() && reported_problems_.insert(pod.uid + "/" + seen.problem).second) {
    // Once per pod and problem: the GPUs it names stay unusable until it goes away.
    metrics_.DecodeError("pod");
    std::string gpus;
    for (const auto& g : seen.held_gpus) gpus += (gpus.empty() ? "" : ", ") + g;
    const std::string message =
        seen.problem + "; GPUs " + (gpus.empty() ? "(none named)" : gpus) +
        " are held whole and not offered to other pods until this pod goes away";
    spdlog::warn("{}", message);
    writer_.RecordEvent(PodRef{pod.ns, pod.name, pod.uid}, true, "UnreadableGPUAllocation",
                        message);
  }
  if (seen.adoption == Adoption::kBound && pod.node_name != seen.placed_node) {
    spdlog::warn("pod {} is bound to {} but its placement names {}; trusting the placement", key,
                 pod.node_name, seen.placed_node);
  }
}

// ---- housekeeping -------------------------------------------------------------------------

size_t ExtenderService::ExpireReservations() {
  std::vector<std::pair<PodRef, std::string>> expired;
  {
    std::lock_guard lock(mu_);
    // Pods only filters named, not named again for as long as a reservation waits, are
    // forgotten (their reservations, if any, expire just below).
    for (const std::string& key :
         filter_only_.Expire(clocks_.steady(), options_.reservation_timeout)) {
      ForgetFilterOnlyPodLocked(key);
    }
    for (auto& e : reservations_.Expire(clocks_.steady())) {
      const size_t slash = e.key.find('/');
      expired.push_back(
          {PodRef{e.key.substr(0, slash), e.key.substr(slash + 1), std::move(e.uid)}, e.node});
    }
    metrics_.SetPending(reservations_.awaiting_bind());
    if (!expired.empty()) refused_.ViewChanged();  // only this process knows of these
  }
  for (const auto& [ref, node] : expired) {
    spdlog::info("released the reservation of pod {} on {}: not bound in time", ref.Key(), node);
    writer_.RecordEvent(
        ref, true, "ReservationExpired",
        "devices reserved on node " + node + " were released: the pod was not bound in time");
  }
  metrics_.ReservationsExpired(expired.size());
  return expired.size();
}

size_t ExtenderService::RequeueWaitingPods() {
  if (options_.requeue_after.count() <= 0) return 0;
  std::vector<PodRef> requeue;
  {
    std::lock_guard lock(mu_);
    if (!synced_ || !leader_) return 0;  // a follower writes nothing
    for (const RefusedPods::Due& due :
         refused_.TakeDue(clocks_.steady(), options_.requeue_after, options_.requeue_batch)) {
      auto it = unbound_.find(due.key);
      if (it == unbound_.end()) {
        refused_.Forget(due.key);
        continue;
      }
      auto admitted = sched::ApplyAdmissionDefaults(it->second, config_.nvidia);
      if (!admitted.ok() || !scheduler_.WouldPlace(admitted->pod, due.candidates.get())) continue;
      requeue.push_back({it->second.ns, it->second.name, it->second.uid});
    }
  }
  // A new value each time: an unchanged annotation would be no update at all.
  const std::string stamp = std::to_string(clocks_.unix_seconds());
  size_t done = 0;
  for (const PodRef& ref : requeue) {
    Status s = writer_.PatchPodAnnotations(ref, {{std::string(ann::kRequeuedAt), stamp}});
    if (!s.ok()) {
      spdlog::warn("requeue {}: {}", ref.Key(), s.message());
      continue;
    }
    ++done;
    spdlog::info("pod {} fits since its last filter; asked kube-scheduler to try it again",
                 ref.Key());
    writer_.RecordEvent(ref, false, "Requeued",
                        "GPU capacity came free after the last scheduling attempt; asked "
                        "kube-scheduler to try again");
  }
  metrics_.Requeued(done);
  return done;
}

ExtenderService::ExplainAnswer ExtenderService::Explain(std::string_view pod_key, bool json,
                                                        const std::string& node) const {
  ExplainAnswer answer;
  if (auto valid = model::ValidatePodKey(pod_key); !valid.ok()) {
    answer.status = 400;
    answer.body = "pod: " + valid.message() + "\n";
    return answer;
  }
  const std::string key(pod_key);
  std::optional<sched::ExplainDraft> draft;
  std::string placed_on;
  {
    std::lock_guard lock(mu_);
    if (const state::PodReservation* r = state_.pod(key); r != nullptr) {
      placed_on = r->node;  // bound, or filtered and waiting for its bind
    } else if (auto it = unbound_.find(key); it != unbound_.end()) {
      auto admitted = sched::ApplyAdmissionDefaults(it->second, config_.nvidia);
      sched::ExplainLimits limits;
      limits.detail_node = node;
      draft = sched::PrepareExplanation(state_, admitted.ok() ? admitted->pod : it->second,
                                        options_.policy, limits);
    }
  }
  if (!draft) {
    if (placed_on.empty()) {
      answer.status = 404;
      answer.body = "pod " + key + ": not a pending pod this scheduler knows\n";
    } else {
      answer.body = "pod " + key + ": placed on node " + placed_on + "\n";
    }
    return answer;
  }
  // The remedy search runs on the draft's own copies, outside the lock.
  const sched::Explanation e = sched::FinishExplanation(std::move(*draft));
  if (json) {
    answer.content_type = "application/json";
    answer.body = sched::ExplanationToJson(e).dump() + "\n";
  } else {
    answer.body = sched::FormatExplanation(e);
  }
  return answer;
}

ExtenderService::UiStateBody ExtenderService::UiState() const {
  UiStateEncoder::Snapshot snap;
  {
    std::lock_guard lock(mu_);
    snap = ui_encoder_.Collect(state_, waiting_);
  }
  std::lock_guard lock(ui_mu_);
  if (!ui_body_ || ui_version_ != snap.version) {
    ui_body_ = std::make_shared<const std::string>(snap.Join());
    ui_version_ = snap.version;
  }
  return UiStateBody{ui_body_, "\"" + ui_etag_prefix_ + "-" + std::to_string(snap.version) + "\""};
}

std::vector<prometheus::MetricFamily> ExtenderService::StateFamilies() const {
  std::lock_guard lock(mu_);
  std::vector<prometheus::MetricFamily> families = GpuUsageFamilies(state_);
  const sched::MigWeights weights(scheduler_.mig_demand_mix(), options_.policy.mig_prior);
  auto placement = PlacementFamilies(state_, weights);
  families.insert(families.end(), std::make_move_iterator(placement.begin()),
                  std::make_move_iterator(placement.end()));
  prometheus::ClientMetric age;
  age.gauge.value = reservations_.OldestWait(clocks_.steady()).count();
  families.push_back(prometheus::MetricFamily{
      "tessera_oldest_pending_reservation_age_seconds",
      "Age of the oldest reservation made by filter and not yet bound (0 when none)",
      prometheus::MetricType::Gauge,
      {age}});
  families.push_back(ClientKeyedFamily(ClientKeyedEntriesLocked()));
  return families;
}

std::map<std::string, size_t> ExtenderService::ClientKeyedEntries() const {
  std::lock_guard lock(mu_);
  return ClientKeyedEntriesLocked();
}

std::map<std::string, size_t> ExtenderService::ClientKeyedEntriesLocked() const {
  return {{"unbound", unbound_.size()},
          {"waiting", waiting_.size()},
          {"refused", refused_.size()},
          {"refused_names", refused_.held_names()},
          {"passthrough", reservations_.passthrough_pods()},
          {"filter_answers", filter_answers_.size()},
          {"filter_answer_names", filter_answers_.held_names()},
          {"filter_only", filter_only_.size()},
          {"ui_strings", ui_encoder_.strings_size()},
          {"problems", reported_problems_.size()}};
}

void ExtenderService::WithState(const std::function<void(const state::ClusterState&)>& fn) const {
  std::lock_guard lock(mu_);
  fn(state_);
}

size_t ExtenderService::pending_reservations() const {
  std::lock_guard lock(mu_);
  return reservations_.awaiting_bind();
}

}  // namespace tessera::scheduler
