#include "core/sched/scheduler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/sched/node_evaluator.h"
#include "core/sched/node_scoring.h"
#include "core/sched/node_status.h"
#include "core/sched/placement_record.h"

namespace tessera::sched {
namespace {

// An unschedulable or invalid pod's decision, with its message.
Decision Rejected(Decision d, const std::string& message) {
  d.message = message;
  return d;
}

}  // namespace

Decision Scheduler::Evaluate(const model::Pod& pod, const std::vector<std::string>* candidates,
                             int64_t now_unix) const {
  if (candidates == nullptr) {
    return EvaluateOn(pod, state_.node_list(), {}, now_unix, explain_failures_);
  }
  std::vector<const state::NodeState*> nodes;
  std::vector<const std::string*> unregistered;
  state::NodeLookup::ResolveOnce(state_, *candidates, &nodes, &unregistered);
  return EvaluateOn(pod, nodes, unregistered, now_unix, explain_failures_);
}

Decision Scheduler::Evaluate(const model::Pod& pod,
                             std::span<const state::NodeState* const> candidates,
                             int64_t now_unix) const {
  return EvaluateOn(pod, candidates, {}, now_unix, explain_failures_);
}

Decision Scheduler::EvaluateOn(const model::Pod& pod,
                               std::span<const state::NodeState* const> nodes,
                               std::span<const std::string* const> unregistered, int64_t now_unix,
                               bool explain) const {
  return EvaluateParsed(pod, ParsePod(pod, state_.config().nvidia, defaults_), nodes, unregistered,
                        now_unix, explain);
}

Decision Scheduler::EvaluateParsed(const model::Pod& pod, ParsedPod parsed,
                                   std::span<const state::NodeState* const> nodes,
                                   std::span<const std::string* const> unregistered,
                                   int64_t now_unix, bool explain) const {
  // Pre-filter: the pod's request and preferences, then what every node's evaluation shares.
  Decision decision;
  if (!PreFilter(pod, state_.quotas(), &parsed, &decision)) return decision;
  const PodRequest& request = parsed.request.value();
  const PodPreferences& prefs = parsed.prefs->value();
  const CycleState cycle(request, prefs, parsed.cpu_milli, mix_, mig_mix_, defaults_,
                         FleetSignals());

  // Filter and score.
  for (const std::string* name : unregistered) {
    decision.failed_nodes[*name] = NodeStatus::Unusable("node unregistered");
  }
  const int total_nodes = static_cast<int>(nodes.size() + decision.failed_nodes.size());
  FilterOutcome filtered =
      FilterNodes(cycle, nodes, equivalence_cache_ ? state_.state_class_bound() : 0, explain,
                  filter_runner_, FilterThreads(cycle, nodes.size()), rank_bound_);
  if (filtered.best == nullptr) {
    // Post-filter: why each node refused the pod, and whether preemption could help.
    if (total_nodes == 0) return Rejected(std::move(decision), "0/0 nodes are available.");
    if (!explain) {
      return Rejected(std::move(decision), "0/" + std::to_string(total_nodes) +
                                               " nodes are available (reasons not collected).");
    }
    ReportRefusals(cycle, &filtered, &decision);
    std::string message = FormatPodMessage(decision.failed_nodes, total_nodes);
    return Rejected(std::move(decision), message);
  }
  // Reserve (prepared here, applied by Schedule): the reservation and its annotations.
  filtered.CompleteBestFit(cycle);
  RecordPlacement(pod, request, parsed.cpu_milli, *filtered.best, filtered.best_fit(), now_unix,
                  &decision);
  return decision;
}

size_t Scheduler::FilterThreads(const CycleState& cycle, size_t nodes) const {
  if (filter_runner_ == nullptr || filter_runner_->concurrency() <= 1) return 1;
  // With the equivalence cache, at most one evaluation per state class.
  const size_t work =
      equivalence_cache_ && cycle.cacheable() ? std::min(nodes, state_.state_class_bound()) : nodes;
  return std::clamp<size_t>(work / min_nodes_per_thread_, 1, filter_runner_->concurrency());
}

void Scheduler::ReportRefusals(const CycleState& cycle, FilterOutcome* filtered,
                               Decision* decision) const {
  PostFilter(cycle, filtered, /*check_preemption=*/true, [decision](const Refusal& refusal) {
    decision->failed_nodes[refusal.node->name] = refusal.Status();
  });
}

CycleVerdicts FilterEveryNode(const state::ClusterState& state, const model::Pod& pod,
                              const PolicyDefaults& defaults) {
  CycleVerdicts verdicts;
  verdicts.parsed = ParsePod(pod, state.config().nvidia, defaults);
  if (!PreFilter(pod, state.quotas(), &verdicts.parsed, &verdicts.decision)) return verdicts;
  // No demand seen: the mixes change which node and GPU rank first, never whether a node fits.
  const DemandMix mix(defaults.demand_decay);
  const MigDemandMix mig_mix(defaults.demand_decay);
  const CycleState cycle(verdicts.parsed.request.value(), verdicts.parsed.prefs->value(),
                         verdicts.parsed.cpu_milli, mix, mig_mix, defaults);
  const std::span<const state::NodeState* const> nodes = state.node_list();
  // Every node fitted (none skipped by the rank bound) and every refusal kept.
  FilterOutcome filtered = FilterNodes(cycle, nodes, state.state_class_bound(),
                                       /*collect_refusals=*/true, nullptr, 1,
                                       /*skip_outranked=*/false);
  const bool none_fits = filtered.best == nullptr;
  std::vector<std::pair<const state::NodeState*, NodeStatus>> refusals;
  PostFilter(cycle, &filtered, none_fits, [&refusals](const Refusal& refusal) {
    refusals.emplace_back(refusal.node, refusal.Status());
  });
  verdicts.nodes.reserve(nodes.size());
  size_t next_refusal = 0;  // refusals come in the nodes' order
  std::map<std::string, NodeStatus> failed;
  for (const state::NodeState* node : nodes) {
    NodeVerdict v;
    v.node = node;
    if (next_refusal < refusals.size() && refusals[next_refusal].first == node) {
      v.status = std::move(refusals[next_refusal++].second);
      if (none_fits) failed[node->name] = v.status;
    } else {
      v.fits = true;
    }
    verdicts.nodes.push_back(std::move(v));
  }
  if (nodes.empty()) {
    verdicts.decision.message = "0/0 nodes are available.";
  } else if (none_fits) {
    verdicts.decision.message = FormatPodMessage(failed, static_cast<int>(nodes.size()));
  } else {
    verdicts.decision.outcome = Outcome::kScheduled;
  }
  return verdicts;
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
  if (FirstSight(pod)) ObserveParsed(parsed);
  return previous;
}

void Scheduler::ObservePod(const model::Pod& pod) {
  if (FirstSight(pod)) ObserveParsed(ParsePod(pod, state_.config().nvidia, defaults_));
}

void Scheduler::ObserveParsed(const ParsedPod& parsed) {
  if (!parsed.request.ok()) return;
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
}

MigFleetSignals Scheduler::FleetSignals() const {
  MigFleetSignals signals;
  // Pods this scheduler placed that have left: placed ones not among the MIG pods held now
  // (pods it did not place, such as those listed at start, make it smaller, never larger).
  const auto resident = static_cast<double>(state_.mig_pods());
  const auto placed = static_cast<double>(mig_pods_placed_);
  if (placed <= 0 || resident >= placed) return signals;
  signals.churn = 1 - resident / placed;
  for (const auto& [rules, fill] : state_.mig_fill()) {
    if (fill.slices <= 0) continue;
    MigFleetSignals::Model& model = signals.models[rules];
    model.fullness = static_cast<double>(fill.used_slices) / static_cast<double>(fill.slices);
    model.free_slices = fill.slices - fill.used_slices;
    model.room = fill.room;
  }
  return signals;
}

Decision Scheduler::EndSchedule(Decision decision, std::optional<state::PodReservation> previous) {
  // A pod placed anew (not one filtered again while it holds its earlier placement).
  if (decision.scheduled() && !previous && !decision.reservation.mig.empty()) ++mig_pods_placed_;
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

bool Scheduler::WouldPlace(const model::Pod& pod, const std::vector<std::string>* candidates) {
  std::optional<state::PodReservation> own = state_.RemovePod(pod.Key());
  std::vector<const state::NodeState*> nodes;
  std::vector<const std::string*> unregistered;
  if (candidates != nullptr) {
    state::NodeLookup::ResolveOnce(state_, *candidates, &nodes, &unregistered);
  }
  const bool placed =
      EvaluateOn(pod,
                 candidates != nullptr ? std::span<const state::NodeState* const>(nodes)
                                       : state_.node_list(),
                 unregistered, /*now_unix=*/0, /*explain=*/false)
          .scheduled();
  if (own) state_.AddPod(std::move(*own));
  return placed;
}

Decision Scheduler::Schedule(const model::Pod& pod, const std::vector<std::string>* candidates,
                             int64_t now_unix) {
  ParsedPod parsed = ParsePod(pod, state_.config().nvidia, defaults_);
  std::optional<state::PodReservation> previous = BeginSchedule(pod, parsed);
  // Looked up after BeginSchedule: the pod's own earlier reservation is no longer in the state.
  std::vector<const state::NodeState*> nodes;
  std::vector<const std::string*> unregistered;
  if (candidates != nullptr) lookup_.Resolve(state_, *candidates, &nodes, &unregistered);
  return EndSchedule(
      EvaluateParsed(pod, std::move(parsed),
                     candidates != nullptr ? std::span<const state::NodeState* const>(nodes)
                                           : state_.node_list(),
                     unregistered, now_unix, explain_failures_),
      std::move(previous));
}

Decision Scheduler::Schedule(const model::Pod& pod,
                             std::span<const state::NodeState* const> candidates,
                             int64_t now_unix) {
  ParsedPod parsed = ParsePod(pod, state_.config().nvidia, defaults_);
  std::optional<state::PodReservation> previous = BeginSchedule(pod, parsed);
  return EndSchedule(
      EvaluateParsed(pod, std::move(parsed), candidates, {}, now_unix, explain_failures_),
      std::move(previous));
}

}  // namespace tessera::sched
