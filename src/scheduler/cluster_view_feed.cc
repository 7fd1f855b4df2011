// The cluster feed of ClusterView: nodes (with the label selector and node liveness), pods,
// ResourceQuotas and PodDisruptionBudgets, as informers or the embedded cluster deliver them.
#include "scheduler/cluster_view.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <utility>

#include "core/codec/job.h"
#include "core/codec/k8s_objects.h"
#include "core/codec/node_lock.h"
#include "core/model/annotations.h"
#include "core/sched/defrag.h"
#include "scheduler/object_name.h"

namespace tessera::scheduler {

using codec::Json;

namespace {

// Decodes a (re)list; an object that does not decode is counted, logged and skipped.
template <class Decode>
auto DecodeAll(const std::vector<Json>& objects, const std::string& kind, Decode decode,
               ServiceMetrics& metrics) {
  std::vector<std::decay_t<decltype(decode(objects.front()).value())>> out;
  for (const auto& o : objects) {
    auto d = decode(o);
    if (!d.ok()) {
      metrics.DecodeError(kind);
      spdlog::warn("skipping {} {}: {}", kind, ObjectName(o), d.error().message);
      continue;
    }
    out.push_back(std::move(d.value()));
  }
  return out;
}

// Everything of the Node the state reads is the same (the resource version aside).
bool SameForState(const model::Node& a, const model::Node& b) {
  return a.name == b.name && a.annotations == b.annotations && a.labels == b.labels &&
         a.allocatable == b.allocatable;
}

bool Selected(const model::Node& node, const std::map<std::string, std::string>& selector) {
  for (const auto& [key, value] : selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  return true;
}

}  // namespace

// ---- nodes --------------------------------------------------------------------------------

void ClusterView::UpsertNodeModel(const model::Node& node) {
  std::lock_guard lock(mu_);
  UpsertNodeLocked(node);
}

std::string ClusterView::BlockReasonLocked(const std::string& node) const {
  if (unselected_.count(node) > 0) return "node unregistered";
  if (not_live_.count(node) > 0) return liveness_.Verdict(node, clocks_.steady());
  return "";
}

void ClusterView::UpsertNodeLocked(const model::Node& given) {
  // The agent's GPU usage goes to its side table, never into the state: the state's node is
  // the Node without it.
  const std::string usage_key(model::annotations::kGpuUsage);
  usage_.Update(given.name, given.Annotation(usage_key));
  std::optional<model::Node> without_usage;
  if (given.annotations.count(usage_key) > 0) {
    without_usage = given;
    without_usage->annotations.erase(usage_key);
  }
  const model::Node& node = without_usage ? *without_usage : given;
  if (Selected(node, options_.node_selector)) {
    unselected_.erase(node.name);
  } else {
    unselected_.insert(node.name);
  }
  liveness_.Observe(node, clocks_.steady());
  if (options_.hami_node_lock) {
    // An unreadable lock is taken over by a bind (stale), so it does not count.
    const std::string* text = node.Annotation(std::string(model::annotations::kNodeLock));
    const auto lock = text != nullptr ? codec::ParseNodeLock(*text) : std::nullopt;
    node_locks_.Observe(node.name, lock.has_value(),
                        lock && !lock->legacy() ? lock->ns + "/" + lock->name : "",
                        clocks_.steady());
  }
  // A node whose plugin came back is live at once; one that went away waits for the next pass.
  if (!liveness_.ZeroSince(node.name)) not_live_.erase(node.name);
  const state::NodeState* before = state_.node(node.name);
  const bool was_usable = before != nullptr && before->usable();
  const uint64_t signature = before != nullptr ? before->signature : 0;
  state_.SetNodeBlocked(node.name, BlockReasonLocked(node.name));
  // A change of the usage alone (the agent's refresh) leaves the state as it is: no stamp moves,
  // so no cache of the node (equivalence classes, the /ui encoder) is invalidated.
  const state::NodeState* current = state_.node(node.name);
  if (without_usage && current != nullptr && SameForState(current->node, node)) return;
  state_.UpsertNode(node);
  known_nodes_ = state_.nodes().size();
  const state::NodeState* after = state_.node(node.name);
  // A heartbeat changes neither: only a node that may take more than before counts.
  if (after != nullptr && after->usable() && (!was_usable || after->signature != signature)) {
    refused_.ViewChanged();
  }
}

ClusterView::LivenessPass ClusterView::CheckNodeLiveness() {
  LivenessPass pass;
  std::lock_guard lock(mu_);
  const auto now = clocks_.steady();
  // Only nodes seen at 0, or marked before, can change (cheap at any cluster size).
  std::set<std::string> candidates = not_live_;
  for (const auto& [name, since] : liveness_.zero_since()) candidates.insert(name);
  for (const auto& name : candidates) {
    if (state_.node(name) == nullptr) continue;
    const bool was = not_live_.count(name) > 0;
    const bool is = !liveness_.Verdict(name, now).empty();
    pass.not_live += is ? 1 : 0;
    if (was != is) pass.changed.emplace_back(name, is ? liveness_.Verdict(name, now) : "");
  }
  for (const auto& [name, reason] : pass.changed) {
    if (reason.empty()) {
      not_live_.erase(name);
      refused_.ViewChanged();  // kube-scheduler saw the node's update before the grace ended
    } else {
      not_live_.insert(name);
    }
    state_.SetNodeBlocked(name, BlockReasonLocked(name));
  }
  return pass;
}

void ClusterView::UpsertNode(const Json& node) {
  auto decoded = codec::DecodeNode(node);
  if (!decoded.ok()) {
    metrics_.DecodeError("node");
    spdlog::warn("skipping node {}: {}", ObjectName(node), decoded.error().message);
    return;
  }
  UpsertNodeModel(*decoded);
}

void ClusterView::DeleteNode(const Json& node) {
  auto decoded = codec::DecodeNode(node);
  std::string name = decoded.ok() ? decoded->name : ObjectName(node);
  std::lock_guard lock(mu_);
  RemoveNodeLocked(name);
}

void ClusterView::RemoveNodeLocked(const std::string& name) {
  usage_.Remove(name);
  state_.RemoveNode(name);
  known_nodes_ = state_.nodes().size();
  state_.SetNodeBlocked(name, "");
  liveness_.Forget(name);
  node_locks_.Forget(name);
  unselected_.erase(name);
  not_live_.erase(name);
}

void ClusterView::ReplaceNodes(const std::vector<Json>& nodes) {
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

// ---- quotas -------------------------------------------------------------------------------

void ClusterView::UpsertQuotaModel(const model::ResourceQuota& quota) {
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

void ClusterView::UpsertQuota(const Json& quota) {
  auto decoded = codec::DecodeResourceQuota(quota);
  if (!decoded.ok()) {
    metrics_.DecodeError("resourcequota");
    spdlog::warn("skipping resourcequota {}: {}", ObjectName(quota), decoded.error().message);
    return;
  }
  UpsertQuotaModel(*decoded);
}

void ClusterView::DeleteQuota(const Json& quota) {
  auto decoded = codec::DecodeResourceQuota(quota);
  if (!decoded.ok()) return;
  std::lock_guard lock(mu_);
  state_.RemoveQuota(decoded->ns, decoded->name);
  refused_.ViewChanged();
}

void ClusterView::ReplaceQuotas(const std::vector<Json>& quotas) {
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

// ---- PodDisruptionBudgets --------------------------------------------------------------------

void ClusterView::UpsertDisruptionBudgetModel(const model::DisruptionBudget& budget) {
  std::lock_guard lock(mu_);
  budgets_[budget.Key()] = budget;
}

void ClusterView::UpsertDisruptionBudget(const Json& budget) {
  auto decoded = codec::DecodePodDisruptionBudget(budget);
  if (!decoded.ok()) {
    metrics_.DecodeError("poddisruptionbudget");
    spdlog::warn("skipping PodDisruptionBudget {}: {}", ObjectName(budget),
                 decoded.error().message);
    return;
  }
  UpsertDisruptionBudgetModel(*decoded);
}

void ClusterView::DeleteDisruptionBudget(const Json& budget) {
  auto decoded = codec::DecodePodDisruptionBudget(budget);
  const std::string key = decoded.ok() ? decoded->Key() : ObjectName(budget);
  std::lock_guard lock(mu_);
  budgets_.erase(key);
}

void ClusterView::ReplaceDisruptionBudgets(const std::vector<Json>& budgets) {
  std::vector<model::DisruptionBudget> decoded =
      DecodeAll(budgets, "poddisruptionbudget", codec::DecodePodDisruptionBudget, metrics_);
  std::lock_guard lock(mu_);
  budgets_.clear();
  for (auto& b : decoded) budgets_[b.Key()] = std::move(b);
}

// ---- Jobs ----------------------------------------------------------------------------------

void ClusterView::UpsertJobModel(const model::JobRetries& job) {
  std::lock_guard lock(mu_);
  jobs_[job.Key()] = job;
}

void ClusterView::UpsertJob(const Json& job) {
  auto decoded = codec::DecodeJob(job);
  if (!decoded.ok()) {
    metrics_.DecodeError("job");
    spdlog::warn("skipping Job {}: {}", ObjectName(job), decoded.error().message);
    // What was known of it no longer holds: its pods stay where they are.
    std::lock_guard lock(mu_);
    jobs_.erase(ObjectName(job));
    return;
  }
  UpsertJobModel(*decoded);
}

void ClusterView::DeleteJob(const Json& job) {
  auto decoded = codec::DecodeJob(job);
  const std::string key = decoded.ok() ? decoded->Key() : ObjectName(job);
  std::lock_guard lock(mu_);
  jobs_.erase(key);
}

void ClusterView::ReplaceJobs(const std::vector<Json>& jobs) {
  std::vector<model::JobRetries> decoded = DecodeAll(jobs, "job", codec::DecodeJob, metrics_);
  std::lock_guard lock(mu_);
  jobs_.clear();
  for (auto& job : decoded) jobs_[job.Key()] = std::move(job);
}

// ---- pods ---------------------------------------------------------------------------------

void ClusterView::UpsertPodModel(const model::Pod& pod) {
  std::lock_guard lock(mu_);
  ApplyPodLocked(pod);
}

void ClusterView::UpsertPod(const Json& pod) {
  auto decoded = codec::DecodePod(pod);
  if (!decoded.ok()) {
    metrics_.DecodeError("pod");
    spdlog::warn("skipping pod {}: {}", ObjectName(pod), decoded.error().message);
    return;
  }
  UpsertPodModel(*decoded);
}

void ClusterView::DeletePod(const Json& pod) {
  auto decoded = codec::DecodePod(pod);
  const std::string key = decoded.ok() ? decoded->Key() : ObjectName(pod);
  std::lock_guard lock(mu_);
  if (decoded.ok()) NoteDefragMoveLocked(*decoded, true);
  ForgetPodLocked(key);
}

void ClusterView::ReplacePods(const std::vector<Json>& pods) {
  std::vector<model::Pod> decoded = DecodeAll(pods, "pod", codec::DecodePod, metrics_);
  std::lock_guard lock(mu_);
  std::set<std::string> present;
  // No room is held for a nominated pod before every pod of the list holds its own: the victims
  // may come later in it.
  holds_deferred_ = true;
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
  std::erase_if(movable_, [&](const auto& entry) { return present.count(entry.first) == 0; });
  std::erase_if(waiting_, [&](const auto& entry) { return unbound_.count(entry.first) == 0; });
  std::erase_if(nominations_, [&](const auto& entry) { return unbound_.count(entry.first) == 0; });
  refused_.KeepOnly(waiting_);
  holds_deferred_ = false;
  HoldForNominatedLocked("");
}

void ClusterView::ForgetPodLocked(const std::string& key) {
  std::optional<state::PodReservation> gone = reservations_.Forget(key);
  ForgetPodViewsLocked(key, gone ? gone->uid : "");
  metrics_.SetPending(reservations_.awaiting_bind());
  if (gone) DevicesFreedLocked(gone->node);
}

void ClusterView::ForgetPodViewsLocked(const std::string& key, const std::string& held_uid) {
  if (!held_uid.empty()) {
    std::erase_if(reported_problems_,
                  [&](const std::string& p) { return p.rfind(held_uid + "/", 0) == 0; });
  }
  unbound_.erase(key);
  movable_.erase(key);
  waiting_.erase(key);
  refused_.Forget(key);
  filter_only_.Forget(key);
  filter_answers_.Forget(key);
  nominations_.erase(key);  // what it held went with it
}

void ClusterView::ApplyPodLocked(const model::Pod& pod) {
  const std::optional<std::string> freed_on = ObservePodLocked(pod);
  NoteNominationLocked(pod);
  NoteDefragMoveLocked(pod, false);
  if (freed_on) DevicesFreedLocked(*freed_on);
}

void ClusterView::NoteDefragMoveLocked(const model::Pod& pod, bool gone) {
  if (!gone && !pod.deleting) return;
  const auto to = pod.annotations.find(std::string(model::annotations::kDefragMovingTo));
  if (to == pod.annotations.end()) return;
  defrag_moves_.Leaving(pod.uid, pod.controller_uid, to->second, clocks_.steady());
}

std::optional<std::string> ClusterView::ObservePodLocked(const model::Pod& pod) {
  using Adoption = state::ReservationCache::Adoption;
  const std::string key = pod.Key();
  const state::PodReservation* before = state_.pod(key);
  const std::string held_on = before != nullptr ? before->node : "";
  state::ReservationCache::Observed seen = reservations_.Observe(pod, clocks_.steady());
  metrics_.SetPending(reservations_.awaiting_bind());
  // A pod that finished, was replaced or gave its devices back freed them.
  std::optional<std::string> freed_on;
  if (seen.forgotten) {
    freed_on = seen.forgotten->node;
  } else if (!held_on.empty() && state_.pod(key) == nullptr) {
    freed_on = held_on;
  }
  if (seen.forgotten || seen.adoption == Adoption::kGone) {
    ForgetPodViewsLocked(key, seen.forgotten ? seen.forgotten->uid : "");
  }
  if (seen.adoption == Adoption::kGone) return freed_on;
  filter_only_.Forget(key);  // the feed shows it: kept until the feed deletes it
  if (!pod.uid.empty()) filter_answers_.ForgetOtherUid(key, pod.uid);
  if (pod.node_name.empty()) {
    unbound_[key] = pod;
    movable_.erase(key);
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
  if (!pod.node_name.empty() && state_.pod(key) != nullptr &&
      sched::RecreatedByController(pod.controller_kind)) {
    movable_[key] = sched::SpecToPlaceAgain(pod);
  } else {
    movable_.erase(key);
  }
  if (seen.adoption == Adoption::kUnreadable) {
    metrics_.DecodeError("pod");
    spdlog::warn("pod {}: {}", key, seen.error);
    return freed_on;
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
  return freed_on;
}

}  // namespace tessera::scheduler
