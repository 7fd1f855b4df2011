// The room preemption frees, held for the pod it was freed for (ClusterView::Nomination).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/sched/admission.h"
#include "scheduler/cluster_view.h"
#include "scheduler/placement_annotations.h"

namespace tessera::scheduler {

void ClusterView::NoteNominationLocked(const model::Pod& pod) {
  const std::string key = pod.Key();
  const bool nominated =
      pod.node_name.empty() && !pod.nominated_node.empty() && !pod.deleting && !pod.IsTerminal();
  auto it = nominations_.find(key);
  if (!nominated) {
    if (it == nominations_.end()) return;
    if (pod.node_name.empty()) {
      DropNominationLocked(key);  // the nomination was withdrawn: so is the room held for it
    } else {
      nominations_.erase(it);  // bound: whatever it held is the cluster's now
    }
    return;
  }
  if (it != nominations_.end() && it->second.uid == pod.uid &&
      it->second.node == pod.nominated_node) {
    it->second.priority = pod.priority;
    return;
  }
  if (it != nominations_.end()) DropNominationLocked(key);  // nominated elsewhere now
  nominations_[key] = Nomination{pod.uid, pod.nominated_node, pod.priority};
  HoldForNominatedLocked(pod.nominated_node);  // its victims may be gone already
}

void ClusterView::DropNominationLocked(const std::string& key) {
  auto it = nominations_.find(key);
  if (it == nominations_.end()) return;
  const uint64_t hold = it->second.hold;
  const std::string node = it->second.node;
  nominations_.erase(it);
  // Undo releases only the hold itself: a reservation its filter made since has another serial.
  if (hold != 0 && reservations_.Undo(key, hold)) {
    filter_answers_.Forget(key);
    metrics_.SetPending(reservations_.awaiting_bind());
    DevicesFreedLocked(node);
  }
}

void ClusterView::DevicesFreedLocked(const std::string& node) {
  refused_.ViewChanged();
  HoldForNominatedLocked(node);
}

void ClusterView::HoldForNominatedLocked(const std::string& node) {
  if (nominations_.empty() || holds_deferred_) return;
  // Highest priority first, as kube-scheduler's queue takes them; then by key, for determinism.
  std::vector<std::pair<int32_t, std::string>> order;
  for (const auto& [key, nomination] : nominations_) {
    if (nomination.spent || (!node.empty() && nomination.node != node)) continue;
    order.emplace_back(nomination.priority, key);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (const auto& entry : order) {
    const std::string& key = entry.second;
    Nomination& nomination = nominations_.at(key);
    auto pod = unbound_.find(key);
    // A pod that holds devices already (its own filter's reservation) needs no hold.
    if (pod == unbound_.end() || state_.pod(key) != nullptr) continue;
    auto admitted = sched::ApplyAdmissionDefaults(pod->second, config_.nvidia);
    if (!admitted.ok()) {
      nomination.spent = true;  // its filter will say why; no room helps
      continue;
    }
    const std::vector<std::string> only{nomination.node};
    // The cheap check first: until the victims are gone the pod does not fit, and a refusal's
    // reasons are most of its cost.
    if (!scheduler_.WouldPlace(admitted->pod, &only)) continue;
    sched::Decision decision = scheduler_.Schedule(admitted->pod, &only, clocks_.unix_seconds());
    nomination.spent = true;
    if (!decision.scheduled()) continue;  // no GPU asked: kube-scheduler's own nomination holds
    nomination.hold = reservations_.Assume(pod->second, decision.node, clocks_.steady(),
                                           options_.write_placement_in_bind
                                               ? PlacementAnnotationsFor(decision, pod->second)
                                               : AnnotationChanges{});
    metrics_.SetPending(reservations_.awaiting_bind());
    metrics_.NominatedPodHeld();
  }
}

}  // namespace tessera::scheduler
