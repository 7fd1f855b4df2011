#include "core/sched/scheduler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/sched/node_evaluator.h"
#include "core/sched/node_scoring.h"
#include "core/sched/placement_record.h"
#include "core/sched/reasons.h"

namespace tessera::sched {
namespace {

// An unschedulable or invalid pod's decision, with its message.
Decision Rejected(Decision d, const std::string& message) {
  d.message = message;
  return d;
}

void Prefetch(const state::NodeState& ns) {
#if defined(__GNUC__)
  __builtin_prefetch(&ns.unusable_reason);
  __builtin_prefetch(&ns.pair_scores);
  __builtin_prefetch(&ns.state_class);
#else
  (void)ns;
#endif
}

}  // namespace

Decision Scheduler::Evaluate(const model::Pod& pod, const std::vector<std::string>* candidates,
                             int64_t now_unix) const {
  if (candidates == nullptr) return EvaluateOn(pod, state_.node_list(), {}, now_unix);
  std::vector<const state::NodeState*> nodes;
  std::vector<const std::string*> unregistered;
  LookUp(*candidates, &nodes, &unregistered);
  return EvaluateOn(pod, nodes, unregistered, now_unix);
}

void Scheduler::LookUp(const std::vector<std::string>& names,
                       std::vector<const state::NodeState*>* nodes,
                       std::vector<const std::string*>* unregistered) const {
  nodes->reserve(names.size());
  for (const auto& name : names) {
    if (const state::NodeState* ns = state_.node(name)) {
      nodes->push_back(ns);
    } else {
      unregistered->push_back(&name);
    }
  }
}

Decision Scheduler::Evaluate(const model::Pod& pod,
                             std::span<const state::NodeState* const> candidates,
                             int64_t now_unix) const {
  return EvaluateOn(pod, candidates, {}, now_unix);
}

Decision Scheduler::EvaluateOn(const model::Pod& pod,
                               std::span<const state::NodeState* const> nodes,
                               std::span<const std::string* const> unregistered,
                               int64_t now_unix) const {
  return EvaluateParsed(pod, ParsePod(pod, state_.config().nvidia, defaults_), nodes, unregistered,
                        now_unix);
}

Decision Scheduler::EvaluateParsed(const model::Pod& pod, ParsedPod parsed,
                                   std::span<const state::NodeState* const> nodes,
                                   std::span<const std::string* const> unregistered,
                                   int64_t now_unix) const {
  // Pre-filter: the pod's request and preferences, then what every node's evaluation shares.
  Decision decision;
  if (!parsed.request.ok()) {
    decision.outcome = Outcome::kInvalidRequest;
    return Rejected(std::move(decision), parsed.request.error().message);
  }
  const PodRequest& request = parsed.request.value();
  decision.container_names = request.names;
  if (!request.HasGpu()) {
    // Not ours: kube-scheduler places it on its own (HAMi's pass-through).
    decision.outcome = Outcome::kPassthrough;
    decision.containers.resize(request.slots.size());
    return decision;
  }
  if (!parsed.prefs->ok()) {
    decision.outcome = Outcome::kInvalidRequest;
    return Rejected(std::move(decision), parsed.prefs->error().message);
  }
  PodPreferences& prefs = parsed.prefs->value();
  prefs.quota = state_.quotas().HeadroomFor(pod.ns);
  const CycleState cycle(request, prefs, parsed.cpu_milli, mix_, mig_mix_, defaults_);

  // Filter and score.
  for (const std::string* name : unregistered) {
    decision.failed_nodes[*name] = "node unregistered";
    decision.unresolvable_nodes.insert(*name);
  }
  const int total_nodes = static_cast<int>(nodes.size() + decision.failed_nodes.size());
  FilterOutcome filtered = FilterAndScore(cycle, nodes);
  if (filtered.best == nullptr) {
    // Post-filter: why each node refused the pod, and whether preemption could help.
    if (total_nodes == 0) return Rejected(std::move(decision), "0/0 nodes are available.");
    if (!explain_failures_) {
      return Rejected(std::move(decision), "0/" + std::to_string(total_nodes) +
                                               " nodes are available (reasons not collected).");
    }
    ReportRefusals(cycle, &filtered, &decision);
    std::string message = FormatPodMessage(decision.failed_nodes, total_nodes);
    return Rejected(std::move(decision), message);
  }
  // Reserve (prepared here, applied by Schedule): the reservation and its annotations.
  RecordPlacement(pod, request, parsed.cpu_milli, *filtered.best, filtered.best_fit(), now_unix,
                  &decision);
  return decision;
}

Scheduler::FilterOutcome Scheduler::FilterAndScore(
    const CycleState& cycle, std::span<const state::NodeState* const> nodes) const {
  FilterOutcome out;
  NodeEvaluator evaluator(cycle);
  // Nodes in the same state give the same answer; evaluate each state once (an equivalence
  // cache, as kube-scheduler once had), looked up by the state class ClusterState keeps for
  // each node (no hashing or state comparison here). A pod's GPU UUID filters act alike on every
  // node of a class whose GPUs they do not name; the few nodes they name are evaluated alone.
  std::vector<uint32_t> by_class;
  if (equivalence_cache_) by_class.assign(state_.state_class_bound(), FilterOutcome::kNone);
  out.evaluated.reserve(equivalence_cache_ ? std::min(nodes.size(), by_class.size())
                                           : nodes.size());
  out.fits.reserve(32);  // few: MayFit rules most nodes out
  uint32_t best_eval = FilterOutcome::kNone;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const state::NodeState* ns = nodes[i];
    // Node states are scattered in memory: ask early for what the loop reads of the next ones.
    if (i + 8 < nodes.size()) Prefetch(*nodes[i + 8]);
    if (!ns->usable()) {
      if (explain_failures_) out.refused.emplace_back(ns, FilterOutcome::kNone);
      continue;
    }
    uint32_t result = FilterOutcome::kNone;
    const bool use_cache = ns->pair_scores.empty() && ns->state_class >= 0 &&
                           static_cast<size_t>(ns->state_class) < by_class.size() &&
                           (cycle.cacheable() || !NamesAnyGpuOf(cycle.prefs(), *ns));
    if (use_cache) result = by_class[ns->state_class];
    if (result == FilterOutcome::kNone) {
      result = static_cast<uint32_t>(out.evaluated.size());
      FilterOutcome::Evaluated& e = out.evaluated.emplace_back();
      e.representative = ns;
      // Most nodes cannot take the pod: a cheap check rules them out before the full fit.
      if (evaluator.MayFit(*ns)) {
        e.fit = static_cast<uint32_t>(out.fits.size());
        e.fits = out.fits.emplace_back(evaluator.FitAndRank(*ns, &e.rank)).fits;
      }
      if (use_cache) by_class[ns->state_class] = result;
    }
    const FilterOutcome::Evaluated& e = out.evaluated[result];
    if (!e.fits) {
      if (explain_failures_) out.refused.emplace_back(ns, result);
      continue;
    }
    if (out.best == nullptr ||
        RanksBefore(e.rank, out.evaluated[best_eval].rank, *ns, *out.best, cycle)) {
      out.best = ns;
      best_eval = result;
    }
  }
  if (out.best != nullptr) out.best_fit_index = out.evaluated[best_eval].fit;
  return out;
}

void Scheduler::ReportRefusals(const CycleState& cycle, FilterOutcome* filtered,
                               Decision* decision) const {
  NodeEvaluator evaluator(cycle);
  PreemptionCheck preemption(cycle);
  for (const auto& [ns, index] : filtered->refused) {
    if (index == FilterOutcome::kNone) {
      decision->failed_nodes[ns->name] = ns->unusable_reason;
      decision->unresolvable_nodes.insert(ns->name);
      continue;
    }
    FilterOutcome::Evaluated& e = filtered->evaluated[index];
    if (e.fit == FilterOutcome::kNone) {  // ruled out by MayFit: the full fit says why
      NodeRank unused;
      e.fit = static_cast<uint32_t>(filtered->fits.size());
      filtered->fits.push_back(evaluator.FitAndRank(*e.representative, &unused));
    }
    NodeFit& fit = filtered->fits[e.fit];
    if (fit.reason_deferred) {  // worked out once per equivalence class
      fit.reason = evaluator.RefusalReason(*e.representative, fit);
      fit.reason_deferred = false;
    }
    decision->failed_nodes[ns->name] = fit.reason;
    if (!preemption.Resolvable(*ns)) decision->unresolvable_nodes.insert(ns->name);
  }
}

bool Scheduler::FirstSight(const model::Pod& pod) {
  // Enough to cover every pod pending at once on a large cluster; an older one seen again
  // counts again, which only matters after thousands of other pods.
  constexpr size_t kRemembered = 16384;
  std::string id = pod.uid.empty() ? pod.Key() : pod.uid;
  if (!observed_.insert(id).second) return false;
  observed_order_.push_back(std::move(id));
  if (observed_order_.size() > kRemembered) {
    observed_.erase(observed_order_.front());
    observed_order_.pop_front();
  }
  return true;
}

std::optional<state::PodReservation> Scheduler::BeginSchedule(const model::Pod& pod,
                                                              const ParsedPod& parsed) {
  // A pod filtered again gives up its earlier reservation first (as HAMi does), but gets it back
  // if it now fits nowhere: nothing reserved is lost on an error path.
  std::optional<state::PodReservation> previous = state_.RemovePod(pod.Key());
  if (!FirstSight(pod) || !parsed.request.ok()) return previous;
  const PodRequest& request = parsed.request.value();
  if (auto shape = ShapeOf(request, parsed.cpu_milli, parsed.demand_type)) mix_.Observe(*shape);
  // A request not pinned to another mode may land on a MIG GPU: it is part of the MIG mix.
  if (parsed.vgpu_mode.ok() && MayUseMig(parsed.vgpu_mode.value())) {
    for (size_t i = 0; i < request.slots.size(); ++i) {
      const ContainerRequest& k = request.slots[i];
      if (request.IsInit(i) || k.Empty()) continue;
      mig_mix_.Observe(MigDemandOf(k), k.nums);
    }
  }
  return previous;
}

Decision Scheduler::EndSchedule(Decision decision, std::optional<state::PodReservation> previous) {
  if (decision.scheduled()) {
    state_.AddPod(decision.reservation);
  } else if (previous) {
    state_.AddPod(std::move(*previous));
  }
  return decision;
}

Decision Scheduler::Preview(const model::Pod& pod, const std::vector<std::string>* candidates,
                            int64_t now_unix) {
  std::optional<state::PodReservation> own = state_.RemovePod(pod.Key());
  Decision decision = Evaluate(pod, candidates, now_unix);
  if (own) state_.AddPod(std::move(*own));
  return decision;
}

Decision Scheduler::Schedule(const model::Pod& pod, const std::vector<std::string>* candidates,
                             int64_t now_unix) {
  ParsedPod parsed = ParsePod(pod, state_.config().nvidia, defaults_);
  std::optional<state::PodReservation> previous = BeginSchedule(pod, parsed);
  // Looked up after BeginSchedule: the pod's own earlier reservation is no longer in the state.
  std::vector<const state::NodeState*> nodes;
  std::vector<const std::string*> unregistered;
  if (candidates != nullptr) LookUp(*candidates, &nodes, &unregistered);
  return EndSchedule(
      EvaluateParsed(pod, std::move(parsed),
                     candidates != nullptr ? std::span<const state::NodeState* const>(nodes)
                                           : state_.node_list(),
                     unregistered, now_unix),
      std::move(previous));
}

Decision Scheduler::Schedule(const model::Pod& pod,
                             std::span<const state::NodeState* const> candidates,
                             int64_t now_unix) {
  ParsedPod parsed = ParsePod(pod, state_.config().nvidia, defaults_);
  std::optional<state::PodReservation> previous = BeginSchedule(pod, parsed);
  return EndSchedule(EvaluateParsed(pod, std::move(parsed), candidates, {}, now_unix),
                     std::move(previous));
}

}  // namespace tessera::sched
