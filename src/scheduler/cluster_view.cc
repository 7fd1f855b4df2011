#include "scheduler/cluster_view.h"

#include <algorithm>
#include <utility>

#include "core/codec/k8s_objects.h"
#include "core/sched/admission.h"
#include "scheduler/placement_annotations.h"

namespace tessera::scheduler {

ClusterView::ClusterView(config::SchedulerConfig config, ServiceOptions options,
                         ClusterWriter& writer, ServiceClocks clocks)
    : config_(config),
      options_(std::move(options)),
      writer_(writer),
      clocks_(std::move(clocks)),
      state_(std::move(config)),
      scheduler_(state_, options_.policy),
      reservations_(state_, options_.reservation_timeout),
      filter_only_(options_.max_filter_only_pods),
      liveness_(config_.nvidia.resource_count_name, options_.node_liveness_grace),
      node_locks_(options_.node_lock_timeout, options_.reservation_timeout) {
  scheduler_.set_filter_runner(options_.filter_runner);
}

// ---- readiness ----------------------------------------------------------------------------

void ClusterView::SetSynced(bool synced) {
  {
    std::lock_guard lock(mu_);
    synced_ = synced;
  }
  ready_cv_.notify_all();
}

void ClusterView::SetLeader(bool leader) {
  {
    std::lock_guard lock(mu_);
    leader_ = leader;
  }
  ready_cv_.notify_all();
}

void ClusterView::ObserveDemandOf(const std::vector<codec::Json>& pods) {
  std::lock_guard lock(mu_);
  for (const codec::Json& json : pods) {
    auto pod = codec::DecodePod(json);
    if (!pod.ok()) continue;  // the feed reports it
    auto admitted = sched::ApplyAdmissionDefaults(*pod, config_.nvidia);
    scheduler_.ObservePod(admitted.ok() ? admitted->pod : *pod);
  }
}

bool ClusterView::Ready(std::string* why) const {
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

bool ClusterView::WaitReady(std::string* why) {
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

ClusterView::Scheduled ClusterView::Schedule(const model::Pod& pod,
                                             const std::vector<std::string>* candidates) {
  Scheduled out;
  sched::Decision& decision = out.decision;
  std::lock_guard lock(mu_);
  NamedByFilterLocked(pod);
  if (pod.node_name.empty()) unbound_[pod.Key()] = pod;
  // Pods created without the webhook get the same resource defaults it would have applied.
  auto admitted = sched::ApplyAdmissionDefaults(pod, config_.nvidia);
  if (!admitted.ok()) {
    decision.outcome = sched::Outcome::kInvalidRequest;
    decision.message = "pod " + pod.Key() + ": " + admitted.error().message;
  } else {
    decision = ScheduleLocked(admitted->pod, candidates);
  }
  if (decision.scheduled() || decision.passthrough()) {
    waiting_.erase(pod.Key());
  } else {
    waiting_[pod.Key()] = decision.message;
  }
  if (decision.outcome == sched::Outcome::kUnschedulable && pod.node_name.empty()) {
    refused_.Refused(pod.Key(), candidates);
  } else {
    refused_.Forget(pod.Key());
  }
  RecordAnswerLocked(pod, decision, candidates);
  if (decision.passthrough()) {
    reservations_.AssumePassthrough(pod.Key());
  } else if (decision.scheduled()) {
    // Placed also gives up the node of an earlier filter of the pod.
    if (options_.hami_node_lock) node_locks_.Placed(decision.node, pod.Key(), clocks_.steady());
    out.serial = reservations_.Assume(pod, decision.node, clocks_.steady(),
                                      options_.write_placement_in_bind
                                          ? PlacementAnnotationsFor(decision, pod)
                                          : AnnotationChanges{});
    metrics_.SetPending(reservations_.awaiting_bind());
  }
  return out;
}

sched::Decision ClusterView::ScheduleLocked(const model::Pod& pod,
                                            const std::vector<std::string>* candidates) {
  if (pod.node_name.empty() && !pod.controller_uid.empty() && defrag_moves_.size() > 0) {
    for (const std::string& node : defrag_moves_.NodesFor(pod.controller_uid, clocks_.steady())) {
      if (candidates != nullptr &&
          std::find(candidates->begin(), candidates->end(), node) == candidates->end()) {
        continue;
      }
      const std::vector<std::string> only{node};
      // Asked first, so that a node where it does not fit leaves no trace of the attempt.
      if (!scheduler_.WouldPlace(pod, &only)) continue;
      sched::Decision decision = scheduler_.Schedule(pod, &only, clocks_.unix_seconds());
      if (!decision.scheduled()) continue;
      defrag_moves_.Used(pod.controller_uid, node);
      metrics_.DefragMoveSteered();
      return decision;
    }
  }
  if (options_.hami_node_lock && candidates != nullptr && node_locks_.size() > 0) {
    // A bind on a node locked for another pod fails with node lock contention and the pod waits
    // for kube-scheduler's backoff: in a burst, where the best node is locked until the device
    // plugin's Allocate, the pod goes to the best node that is not, if one fits
    // (docs/serve.md, "Node lock"; the same decision as before when none is locked).
    const std::string key = pod.Key();
    const auto now = clocks_.steady();
    std::vector<std::string> unlocked;
    unlocked.reserve(candidates->size());
    for (const std::string& node : *candidates) {
      if (!node_locks_.HeldForOther(node, key, now)) unlocked.push_back(node);
    }
    // Asked first, so that a refusal among the unlocked nodes leaves no trace of the attempt.
    if (!unlocked.empty() && unlocked.size() < candidates->size() &&
        scheduler_.WouldPlace(pod, &unlocked)) {
      sched::Decision decision = scheduler_.Schedule(pod, &unlocked, clocks_.unix_seconds());
      if (decision.scheduled()) {
        metrics_.LockedNodesAvoided();
        return decision;
      }
    }
  }
  return scheduler_.Schedule(pod, candidates, clocks_.unix_seconds());
}

void ClusterView::NamedByFilterLocked(const model::Pod& pod) {
  const std::string key = pod.Key();
  // Pods the feed shows unbound are in unbound_ and not filter-only; any other is only this
  // request's word (or not yet seen by the informers: they forget it when they show it).
  auto fed = unbound_.find(key);
  if (fed != unbound_.end() && fed->second.uid == pod.uid && !filter_only_.Contains(key)) return;
  for (const std::string& dropped : filter_only_.Named(key, clocks_.steady())) {
    ForgetFilterOnlyPodLocked(dropped);
  }
}

void ClusterView::ForgetFilterOnlyPodLocked(const std::string& key) {
  filter_only_.Forget(key);
  unbound_.erase(key);
  waiting_.erase(key);
  refused_.Forget(key);
  filter_answers_.Forget(key);
  reservations_.DropPassthrough(key);
}

void ClusterView::RecordAnswerLocked(const model::Pod& pod, const sched::Decision& decision,
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

void ClusterView::ReleaseReservation(const std::string& key, uint64_t serial) {
  std::lock_guard lock(mu_);
  node_locks_.Released(key);
  if (reservations_.Undo(key, serial)) {
    filter_answers_.Forget(key);  // the placement it offered is gone: filter again
    metrics_.SetPending(reservations_.awaiting_bind());
    DevicesFreedLocked("");
  }
}

// ---- bind, prioritize, webhook ------------------------------------------------------------

ClusterView::BindStart ClusterView::StartBind(const std::string& key, const std::string& uid,
                                              const std::string& node) {
  BindStart start;
  std::lock_guard lock(mu_);
  start.answer = filter_answers_.ForBind(key, uid, node);
  if (start.answer.verdict == FilterAnswers::Verdict::kNoAnswer) {
    switch (PlaceForBindLocked(key, uid, node)) {
      case BindPlacement::kPlaced:
        start.answer.verdict = FilterAnswers::Verdict::kOffered;
        start.placed_here = true;
        break;
      case BindPlacement::kDoesNotFit:
        start.does_not_fit_here = true;
        break;
      case BindPlacement::kNotOurs:
        break;
    }
  }
  // Nothing starts for a bind the pod's last filter did not offer, or for a pod bound already.
  if (start.answer.verdict == FilterAnswers::Verdict::kOffered) {
    start.ticket = reservations_.BeginBind(key, node);
  }
  return start;
}

ClusterView::BindPlacement ClusterView::PlaceForBindLocked(const std::string& key,
                                                           const std::string& uid,
                                                           const std::string& node) {
  auto pod = unbound_.find(key);
  // Only a pod the feed shows, as it is now, and one this scheduler schedules (its
  // schedulerName): a bind for any other pod, which kube-scheduler never sends, stays refused.
  if (pod == unbound_.end() || pod->second.uid != uid || uid.empty() ||
      filter_only_.Contains(key) || options_.webhook.scheduler_name.empty() ||
      pod->second.scheduler_name != options_.webhook.scheduler_name) {
    return BindPlacement::kNotOurs;
  }
  auto admitted = sched::ApplyAdmissionDefaults(pod->second, config_.nvidia);
  if (!admitted.ok()) return BindPlacement::kNotOurs;  // its filter says why
  const std::vector<std::string> only{node};
  if (!scheduler_.WouldPlace(admitted->pod, &only)) return BindPlacement::kDoesNotFit;
  sched::Decision decision = scheduler_.Schedule(admitted->pod, &only, clocks_.unix_seconds());
  waiting_.erase(key);
  refused_.Forget(key);
  RecordAnswerLocked(pod->second, decision, &only);
  if (decision.passthrough()) {
    reservations_.AssumePassthrough(key);
    return BindPlacement::kPlaced;
  }
  if (!decision.scheduled()) return BindPlacement::kDoesNotFit;
  // Whatever --write-placement says, no filter wrote this placement: the bind writes it.
  reservations_.Assume(pod->second, decision.node, clocks_.steady(),
                       PlacementAnnotationsFor(decision, pod->second));
  metrics_.SetPending(reservations_.awaiting_bind());
  return BindPlacement::kPlaced;
}

void ClusterView::FinishBind(const std::string& key, const std::string& uid,
                             const std::string& node, uint64_t serial) {
  std::lock_guard lock(mu_);
  reservations_.BindDone(key, serial);
  filter_answers_.Bound(key, uid, node);
  metrics_.SetPending(reservations_.awaiting_bind());
}

sched::Decision ClusterView::Preview(const model::Pod& pod,
                                     const std::vector<std::string>* candidates) {
  std::lock_guard lock(mu_);
  return scheduler_.Preview(pod, candidates, clocks_.unix_seconds());
}

std::optional<state::QuotaHeadroom> ClusterView::QuotaHeadroom(const std::string& ns) const {
  std::lock_guard lock(mu_);
  return state_.quotas().HeadroomFor(ns);
}

// ---- housekeeping -------------------------------------------------------------------------

std::vector<state::ReservationCache::Expired> ClusterView::ExpireReservations() {
  std::lock_guard lock(mu_);
  // Pods only filters named, not named again for as long as a reservation waits, are forgotten
  // (their reservations, if any, expire just below).
  for (const std::string& key :
       filter_only_.Expire(clocks_.steady(), options_.reservation_timeout)) {
    ForgetFilterOnlyPodLocked(key);
  }
  std::vector<state::ReservationCache::Expired> expired = reservations_.Expire(clocks_.steady());
  metrics_.SetPending(reservations_.awaiting_bind());
  for (const auto& e : expired) DevicesFreedLocked(e.node);  // only this process knows of these
  return expired;
}

std::vector<PodRef> ClusterView::WaitingPodsThatNowFit() {
  std::vector<PodRef> fit;
  std::lock_guard lock(mu_);
  if (!synced_ || !leader_) return fit;
  for (const RefusedPods::Due& due :
       refused_.TakeDue(clocks_.steady(), options_.requeue_after, options_.requeue_batch)) {
    auto it = unbound_.find(due.key);
    if (it == unbound_.end()) {
      refused_.Forget(due.key);
      continue;
    }
    auto admitted = sched::ApplyAdmissionDefaults(it->second, config_.nvidia);
    if (!admitted.ok() || !scheduler_.WouldPlace(admitted->pod, due.candidates.get())) continue;
    fit.push_back({it->second.ns, it->second.name, it->second.uid});
  }
  return fit;
}

// ---- reads --------------------------------------------------------------------------------

ClusterView::PreemptionCopies ClusterView::CopyForPreemption(
    const std::vector<std::string>& nodes) const {
  PreemptionCopies copies;
  copies.nodes.reserve(nodes.size());
  std::lock_guard lock(mu_);
  for (const std::string& name : nodes) {
    copies.nodes.push_back(state_.Subset({name}));
    const state::NodeState* node = state_.node(name);
    if (node == nullptr) continue;
    for (const std::string& key : node->pods) {
      if (reservations_.IsAwaitingBind(key)) copies.awaiting_bind.insert(key);
    }
  }
  copies.budgets.reserve(budgets_.size());
  for (const auto& [key, budget] : budgets_) copies.budgets.push_back(budget);
  return copies;
}

ClusterView::ExplainSubject ClusterView::PrepareExplanation(const std::string& key,
                                                            const std::string& detail_node) const {
  ExplainSubject subject;
  std::lock_guard lock(mu_);
  if (const state::PodReservation* r = state_.pod(key); r != nullptr) {
    subject.placed_on = r->node;  // bound, or filtered and waiting for its bind
  } else if (auto it = unbound_.find(key); it != unbound_.end()) {
    auto admitted = sched::ApplyAdmissionDefaults(it->second, config_.nvidia);
    sched::ExplainLimits limits;
    limits.detail_node = detail_node;
    subject.draft = sched::PrepareExplanation(state_, admitted.ok() ? admitted->pod : it->second,
                                              options_.policy, limits);
  }
  return subject;
}

ClusterView::DefragInputs ClusterView::CopyForDefrag() const {
  // The pods as filter sees them: with the admission defaults a webhook would have set.
  auto as_filtered = [this](const model::Pod& pod) {
    auto admitted = sched::ApplyAdmissionDefaults(pod, config_.nvidia);
    return admitted.ok() ? admitted->pod : pod;
  };
  std::lock_guard lock(mu_);
  DefragInputs inputs{
      state_,         {}, {}, {}, {}, scheduler_.demand_mix(), scheduler_.mig_demand_mix(),
      options_.policy};
  // Pending: what the last filter placed nowhere, and this scheduler's unbound pods no filter
  // here has seen yet (a one-shot view, or a replica that just started), that hold nothing.
  const std::string& ours = options_.webhook.scheduler_name;
  for (const auto& [key, pod] : unbound_) {
    // A pod only a filter request named is not known to exist: it may have been deleted while
    // kube-scheduler still filtered it. Only the feed's pods are planned for.
    if (filter_only_.Contains(key)) continue;
    const bool waiting = waiting_.contains(key);
    const bool unseen_ours =
        !ours.empty() && pod.scheduler_name == ours && !pod.deleting && state_.pod(key) == nullptr;
    if (waiting || unseen_ours) inputs.pending.push_back(as_filtered(pod));
  }
  std::stable_sort(inputs.pending.begin(), inputs.pending.end(),
                   [](const model::Pod& a, const model::Pod& b) { return a.created < b.created; });
  inputs.movable.reserve(movable_.size());
  for (const auto& [key, pod] : movable_) inputs.movable.push_back(as_filtered(pod));
  inputs.budgets.reserve(budgets_.size());
  for (const auto& [key, budget] : budgets_) inputs.budgets.push_back(budget);
  inputs.jobs.reserve(jobs_.size());
  for (const auto& [key, job] : jobs_) inputs.jobs.push_back(job);
  return inputs;
}

UiStateEncoder::Snapshot ClusterView::CollectUiState() const {
  std::lock_guard lock(mu_);
  return ui_encoder_.Collect(state_, waiting_);
}

void ClusterView::ReadForMetrics(const std::function<void(const MetricsReading&)>& fn) const {
  std::lock_guard lock(mu_);
  fn(MetricsReading{state_, scheduler_.mig_demand_mix(), scheduler_.FleetSignals(),
                    reservations_.OldestWait(clocks_.steady()), ClientKeyedEntriesLocked()});
}

void ClusterView::WithState(const std::function<void(const state::ClusterState&)>& fn) const {
  std::lock_guard lock(mu_);
  fn(state_);
}

std::map<std::string, size_t> ClusterView::ClientKeyedEntries() const {
  std::lock_guard lock(mu_);
  return ClientKeyedEntriesLocked();
}

std::map<std::string, size_t> ClusterView::ClientKeyedEntriesLocked() const {
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

size_t ClusterView::pending_reservations() const {
  std::lock_guard lock(mu_);
  return reservations_.awaiting_bind();
}

}  // namespace tessera::scheduler
