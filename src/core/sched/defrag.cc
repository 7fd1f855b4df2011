#include "core/sched/defrag.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <utility>

#include "core/model/annotations.h"
#include "core/sched/cycle_state.h"
#include "core/sched/preemption.h"
#include "core/sched/scheduler.h"

namespace tessera::sched {
namespace {

// The planner has no clock: the time its placements would carry is never written anywhere.
constexpr int64_t kNoTime = 0;
// Measures are sums of doubles: a move that changes one by less than this leaves it as it was.
constexpr double kMeasureTolerance = 1e-9;

int64_t HeldMemory(const state::PodReservation& r) {
  int64_t mem = 0;
  for (const auto& slot : r.devices) {
    for (const auto& device : slot) mem += device.used_mem;
  }
  return mem;
}

std::string_view NamespaceOf(const std::string& key) {
  const size_t slash = key.find('/');
  return slash == std::string::npos ? std::string_view{} : std::string_view(key).substr(0, slash);
}

std::vector<FreedDevice> FreedBy(const state::PodReservation& r) {
  std::vector<FreedDevice> out;
  for (size_t slot = 0; slot < r.devices.size(); ++slot) {
    for (size_t i = 0; i < r.devices[slot].size(); ++i) {
      const codec::ContainerDevice& device = r.devices[slot][i];
      FreedDevice freed{device.uuid, device.used_mem, device.used_cores, "", {}};
      for (const codec::MigAllocation& m : r.mig) {
        if (m.container_index == static_cast<int>(slot) && m.device_index == static_cast<int>(i)) {
          freed.mig_profile = m.profile;
          freed.placement = m.placement;
        }
      }
      out.push_back(std::move(freed));
    }
  }
  return out;
}

std::vector<GrantedDevice> DevicesOf(const Decision& decision) {
  std::vector<GrantedDevice> out;
  for (const auto& container : decision.containers) {
    out.insert(out.end(), container.begin(), container.end());
  }
  return out;
}

// How far a measure's change goes towards its threshold (1 = exactly the threshold).
double Progress(double change, double threshold) {
  return change / std::max(threshold, kMeasureTolerance);
}

// kube-scheduler's own resource fit, for host CPU: the nodes of `state` whose allocatable CPU
// (when the Node says it) leaves `cpu_milli`, but `except`. The extender only ever sees the
// nodes that pass it, so a plan must not place a pod where they would not.
std::vector<std::string> NodesWithCpuFor(const state::ClusterState& state, int64_t cpu_milli,
                                         const std::string& except = "") {
  std::vector<std::string> nodes;
  nodes.reserve(state.node_list().size());
  for (const state::NodeState* node : state.node_list()) {
    if (node->name == except) continue;
    if (node->cpu_allocatable_milli &&
        *node->cpu_allocatable_milli - node->cpu_used_milli < cpu_milli) {
      continue;
    }
    nodes.push_back(node->name);
  }
  return nodes;
}

class Planner {
 public:
  Planner(const state::ClusterState& state, std::span<const model::Pod> pending,
          std::span<const model::Pod> running, const PolicyDefaults& defaults,
          std::span<const model::DisruptionBudget> budgets, std::span<const model::JobRetries> jobs,
          const DefragLimits& limits, ObservedDemand observed)
      : work_(state),
        pending_(pending.begin(), pending.end()),
        defaults_(defaults),
        budgets_(budgets.begin(), budgets.end()),
        limits_(limits),
        measure_(Observed(pending, running), state.config().nvidia, defaults, observed) {
    for (const model::Pod& pod : running) specs_.emplace(pod.Key(), &pod);
    // A Job's retries are a budget of its own over the pods its controller uid labels.
    for (const model::JobRetries& job : jobs) {
      if (job.uid.empty()) continue;
      model::DisruptionBudget budget;
      budget.ns = job.ns;
      budget.name = job.name;
      budget.match_labels.emplace(model::kJobControllerUidLabel, job.uid);
      budget.disruptions_allowed = job.EvictionsAllowed();
      job_budgets_.push_back(std::move(budget));
      jobs_.push_back(&job);
    }
  }

  DefragPlan Run() {
    plan_.limits = limits_;
    plan_.before = measure_.Cluster(work_);
    for (const auto& [key, reservation] : work_.pods()) {
      if (std::string why = WhyNot(reservation); !why.empty()) plan_.unmovable.emplace(key, why);
    }
    // Highest priority first; within a priority, the order given (oldest first).
    std::stable_sort(
        pending_.begin(), pending_.end(),
        [](const model::Pod& a, const model::Pod& b) { return a.priority > b.priority; });
    for (const model::Pod& pod : pending_) AdmitPending(pod);
    if (plan_.steps.empty() && limits_.raise_placeability) RaisePlaceability();
    plan_.after = measure_.Cluster(work_);
    if (plan_.steps.empty()) {
      plan_.mode = DefragPlan::Mode::kNothing;
      plan_.why_empty = WhyEmpty();
    } else if (!plan_.steps.front().admits.empty()) {
      plan_.mode = DefragPlan::Mode::kAdmitPending;
    } else {
      plan_.mode = DefragPlan::Mode::kRaisePlaceability;
    }
    return std::move(plan_);
  }

 private:
  // The cluster after one set of evictions for a pending pod, on a copy: the pod placed on the
  // node the set frees, then every evicted pod placed again by the scheduler.
  struct Trial {
    std::string node;
    state::ClusterState state;
    Decision admitted;
    std::vector<state::PodReservation> evicted;  // as they were
    std::vector<Decision> replaced;              // in the order of `evicted`
  };

  static std::vector<model::Pod> Observed(std::span<const model::Pod> pending,
                                          std::span<const model::Pod> running) {
    std::vector<model::Pod> pods(running.begin(), running.end());
    pods.insert(pods.end(), pending.begin(), pending.end());
    return pods;
  }

  const model::Pod* SpecOf(const std::string& key) const {
    auto it = specs_.find(key);
    return it == specs_.end() ? nullptr : it->second;
  }

  // A budget that the pod's eviction alone would break, given the plan's evictions so far.
  std::string BlockingBudget(const state::PodReservation& r) const {
    const std::string ns(NamespaceOf(r.key));
    for (const model::DisruptionBudget& budget : budgets_) {
      if (budget.disruptions_allowed <= 0 && budget.Selects(ns, r.labels)) return budget.Key();
    }
    return "";
  }

  // Why a Job's pod may not move: its Job unknown, or no retry to spare for the eviction.
  std::string BlockingJob(const state::PodReservation& r) const {
    if (r.controller_kind != "Job") return "";
    const auto uid = r.labels.find(model::kJobControllerUidLabel);
    if (uid == r.labels.end()) {
      return std::string("its Job cannot be told (no ") + model::kJobControllerUidLabel +
             " label), so its retries cannot be counted";
    }
    const std::string ns(NamespaceOf(r.key));
    for (size_t i = 0; i < job_budgets_.size(); ++i) {
      if (job_budgets_[i].ns != ns || jobs_[i]->uid != uid->second) continue;
      if (job_budgets_[i].disruptions_allowed > 0) return "";
      std::string why = jobs_[i]->WhyNoEviction();
      return why.empty() ? "the plan's other evictions use the retries its Job " + jobs_[i]->Key() +
                               " can spare"
                         : why;
    }
    return "its Job is not known, so its retries cannot be counted";
  }

  std::string WhyNot(const state::PodReservation& r) const {
    if (std::string why = WhyNotMovable(r, SpecOf(r.key)); !why.empty()) return why;
    if (std::string budget = BlockingBudget(r); !budget.empty()) {
      return "PodDisruptionBudget " + budget + " allows no more disruptions";
    }
    return BlockingJob(r);
  }

  bool MayMove(const state::PodReservation& r) const {
    return !moved_.contains(r.key) && WhyNot(r).empty();
  }

  int64_t CpuOf(const model::Pod& pod) const {
    return ParsePod(pod, work_.config().nvidia, defaults_).cpu_milli;
  }

  // (a): the cheapest set of movable pods on one node whose departure admits `pod`.
  void AdmitPending(const model::Pod& pod) {
    const std::string key = pod.Key();
    Scheduler live(work_, defaults_);
    const std::vector<std::string> with_cpu = NodesWithCpuFor(work_, CpuOf(pod));
    const Decision now = live.Evaluate(pod, &with_cpu, kNoTime);
    if (now.passthrough()) {
      plan_.not_admitted[key] = "asks for no GPU";
      return;
    }
    if (now.invalid_request()) {
      plan_.not_admitted[key] = "its GPU request is invalid: " + now.message;
      return;
    }
    if (now.scheduled()) {
      // Earlier steps left room for it: it needs no eviction of its own.
      const Decision placed = live.Schedule(pod, &with_cpu, kNoTime);
      plan_.admitted.push_back({key, placed.node, DevicesOf(placed), {}, placed.reservation});
      moved_.insert(key);
      return;
    }
    const int left = limits_.max_evictions - static_cast<int>(plan_.steps.size());
    if (left <= 0) {
      plan_.not_admitted[key] = "the plan's evictions are spent";
      return;
    }
    std::optional<Trial> best = FindCheapestSet(pod, left);
    if (!best) return;
    Accept(pod, std::move(*best));
  }

  struct NodeSearch {
    state::ClusterState one;  // the node alone
    std::vector<VictimCandidate> movable;
  };

  std::vector<NodeSearch> SearchableNodes(const model::Pod& pod) {
    std::vector<NodeSearch> out;
    const CycleVerdicts verdicts = FilterEveryNode(work_, pod, defaults_);
    for (const NodeVerdict& v : verdicts.nodes) {
      // Only nodes that could hold the pod emptied (the post-filter's preemption check).
      if (v.fits || !v.status.resolvable()) continue;
      NodeSearch search{work_.Subset({v.node->name}), {}};
      for (const std::string& key : v.node->pods) {
        const state::PodReservation* r = work_.pod(key);
        if (r == nullptr || !MayMove(*r)) continue;
        // One priority for all: the cost is the set's size, then the memory it moves.
        search.movable.push_back({key, 0, HeldMemory(*r), r->labels});
      }
      if (!search.movable.empty()) out.push_back(std::move(search));
    }
    return out;
  }

  std::optional<Trial> FindCheapestSet(const model::Pod& pod, int largest) {
    const std::string key = pod.Key();
    std::vector<NodeSearch> nodes = SearchableNodes(pod);
    if (nodes.empty()) {
      plan_.not_admitted[key] = "no node could hold it with its movable pods gone";
      return std::nullopt;
    }
    std::optional<VictimSet> best;
    std::optional<Trial> best_trial;
    std::optional<Trial> last_trial;
    std::vector<bool> hopeless(nodes.size(), false);
    bool stopped = false;
    for (int size = 1; size <= largest && !best && !stopped; ++size) {
      for (size_t n = 0; n < nodes.size() && !stopped; ++n) {
        if (hopeless[n] || static_cast<size_t>(size) > nodes[n].movable.size()) continue;
        NodeSearch& node = nodes[n];
        const std::string name = node.one.node_list().front()->name;
        const std::vector<std::string> only{name};
        Scheduler on_node(node.one, defaults_);
        auto fits_alone = [&] { return on_node.Evaluate(pod, &only, kNoTime).scheduled(); };
        VictimSearch search(node.one, node.movable, budgets_);
        if (size == 1) {
          ++plan_.evaluations;
          if (!search.FitsWithAllGone(fits_alone)) {
            hopeless[n] = true;
            continue;
          }
        }
        // A set fits when the pod fits on the node without it, it breaks no budget, and every
        // pod of it can be placed again elsewhere (the search removes the set from the copy
        // before asking, so the set is the candidates the copy lacks).
        auto fits = [&] {
          if (!fits_alone()) return false;
          std::vector<const VictimCandidate*> set;
          for (const VictimCandidate& c : search.candidates()) {
            if (node.one.pod(c.key) == nullptr) set.push_back(&c);
          }
          if (CountPdbViolations(set, budgets_) > 0) return false;
          if (CountPdbViolations(set, job_budgets_) > 0) return false;
          std::optional<Trial> trial = TryEvicting(pod, name, set);
          if (!trial) return false;
          last_trial = std::move(trial);  // the search's new best: it only tries cheaper sets
          return true;
        };
        const auto outcome =
            search.TrySetsOfSize(size, fits, &best, &plan_.evaluations, limits_.max_evaluations);
        if (outcome.improved) best_trial = std::exchange(last_trial, std::nullopt);
        stopped = outcome.stopped;
      }
    }
    if (stopped) plan_.search_complete = false;
    if (!best_trial) {
      const bool all_hopeless = std::all_of(hopeless.begin(), hopeless.end(), std::identity{});
      if (stopped) {
        plan_.not_admitted[key] = "the search's evaluation budget ran out";
      } else if (all_hopeless) {
        plan_.not_admitted[key] = "no node could hold it with its movable pods gone";
      } else {
        plan_.not_admitted[key] = "no set of at most " + std::to_string(largest) + " movable pod" +
                                  (largest == 1 ? "" : "s") +
                                  " on one node admits it with every evicted pod placed again";
      }
    }
    return best_trial;
  }

  std::optional<Trial> TryEvicting(const model::Pod& pod, const std::string& node,
                                   const std::vector<const VictimCandidate*>& set) {
    Trial trial{node, work_, {}, {}, {}};
    for (const VictimCandidate* c : set) {
      if (auto r = trial.state.RemovePod(c->key)) trial.evicted.push_back(std::move(*r));
    }
    Scheduler scheduler(trial.state, defaults_);
    // The pending pod first, so the evicted pods cannot take back the room freed for it.
    const std::vector<std::string> only = NodesWithCpuFor(trial.state, CpuOf(pod));
    if (std::find(only.begin(), only.end(), node) == only.end()) return std::nullopt;
    const std::vector<std::string> just{node};
    ++plan_.evaluations;
    trial.admitted = scheduler.Schedule(pod, &just, kNoTime);
    if (!trial.admitted.scheduled()) return std::nullopt;
    for (const state::PodReservation& r : trial.evicted) {
      ++plan_.evaluations;
      const model::Pod& spec = *SpecOf(r.key);
      const std::vector<std::string> with_cpu = NodesWithCpuFor(trial.state, CpuOf(spec));
      Decision again = scheduler.Schedule(spec, &with_cpu, kNoTime);
      if (!again.scheduled()) return std::nullopt;
      trial.replaced.push_back(std::move(again));
    }
    return trial;
  }

  void Accept(const model::Pod& pod, Trial trial) {
    AdmittedPod admitted{
        pod.Key(), trial.admitted.node, DevicesOf(trial.admitted), {}, trial.admitted.reservation};
    for (size_t i = 0; i < trial.evicted.size(); ++i) {
      DefragStep step = StepOf(trial.evicted[i], trial.replaced[i]);
      step.admits = pod.Key();
      admitted.evicted.push_back(step.pod);
      Record(trial.evicted[i], std::move(step));
    }
    moved_.insert(pod.Key());
    plan_.admitted.push_back(std::move(admitted));
    work_ = std::move(trial.state);
  }

  static DefragStep StepOf(const state::PodReservation& evicted, const Decision& again) {
    DefragStep step;
    step.pod = evicted.key;
    step.node = evicted.node;
    step.frees = FreedBy(evicted);
    step.freed_mem = HeldMemory(evicted);
    step.replaced_node = again.node;
    step.replaced_on = DevicesOf(again);
    step.replaced_reservation = again.reservation;
    return step;
  }

  // An accepted eviction: the pod moves once per plan, and takes one from each budget it is in.
  void Record(const state::PodReservation& evicted, DefragStep step) {
    const std::string ns(NamespaceOf(evicted.key));
    for (model::DisruptionBudget& budget : budgets_) {
      if (budget.Selects(ns, evicted.labels)) --budget.disruptions_allowed;
    }
    for (model::DisruptionBudget& budget : job_budgets_) {
      if (budget.Selects(ns, evicted.labels)) --budget.disruptions_allowed;
    }
    moved_.insert(evicted.key);
    plan_.steps.push_back(std::move(step));
  }

  struct Move {
    std::string pod;
    double progress = 0;
    double placeability_gain = 0;
    double fragmentation_drop = 0;
    Decision decision;
  };

  // (b): greedy, one pod per step, placed again by the scheduler on another node: of the moves
  // that worsen neither measure, the one that goes furthest past its threshold; ties to the
  // first pod by key.
  void RaisePlaceability() {
    while (static_cast<int>(plan_.steps.size()) < limits_.max_evictions) {
      std::optional<Move> best = BestMove();
      if (!best) return;
      state::PodReservation original = *work_.RemovePod(best->pod);
      work_.AddPod(best->decision.reservation);
      DefragStep step = StepOf(original, best->decision);
      step.placeability_gain = best->placeability_gain;
      step.fragmentation_drop = best->fragmentation_drop;
      Record(original, std::move(step));
    }
  }

  std::optional<Move> BestMove() {
    std::optional<Move> best;
    std::vector<std::string> keys;
    for (const auto& [key, reservation] : work_.pods()) {
      if (MayMove(reservation)) keys.push_back(key);
    }
    for (const std::string& key : keys) {
      if (plan_.evaluations >= limits_.max_evaluations) {
        plan_.search_complete = false;
        return best;
      }
      ++plan_.evaluations;
      std::optional<Move> move = TryMove(key);
      if (!move || move->progress < 1.0 - kMeasureTolerance) continue;
      if (!best || move->progress > best->progress + kMeasureTolerance) best = std::move(move);
    }
    return best;
  }

  // The pod evicted and placed again by the scheduler on another node, on the working state and
  // undone: where it goes, and what each measure gains there (from the two nodes that change).
  std::optional<Move> TryMove(const std::string& key) {
    const std::string source = work_.pod(key)->node;
    const state::NodeState* source_node = work_.node(source);
    if (source_node == nullptr) return std::nullopt;
    const std::vector<std::string> others = NodesWithCpuFor(work_, CpuOf(*SpecOf(key)), source);
    const ClusterMeasures before_source = measure_.Node(*source_node);
    state::PodReservation original = *work_.RemovePod(key);
    const ClusterMeasures after_source = measure_.Node(*work_.node(source));
    Scheduler scheduler(work_, defaults_);
    Decision decision = scheduler.Schedule(*SpecOf(key), &others, kNoTime);
    std::optional<Move> move;
    if (decision.scheduled()) {
      const ClusterMeasures after_target = measure_.Node(*work_.node(decision.node));
      (void)work_.RemovePod(key);
      const ClusterMeasures before_target = measure_.Node(*work_.node(decision.node));
      Move m;
      m.pod = key;
      m.placeability_gain = after_source.mig_placeability + after_target.mig_placeability -
                            before_source.mig_placeability - before_target.mig_placeability;
      m.fragmentation_drop =
          before_source.sharing_fragmentation + before_target.sharing_fragmentation -
          after_source.sharing_fragmentation - after_target.sharing_fragmentation;
      // Neither measure may get worse.
      if (m.placeability_gain >= -kMeasureTolerance && m.fragmentation_drop >= -kMeasureTolerance) {
        m.progress = std::max(Progress(m.placeability_gain, limits_.min_gain),
                              Progress(m.fragmentation_drop, limits_.min_fragmentation_drop));
        m.decision = std::move(decision);
        move = std::move(m);
      }
    }
    work_.AddPod(std::move(original));
    return move;
  }

  std::string WhyEmpty() const {
    if (limits_.max_evictions <= 0) return "the plan may evict no pod (max evictions 0)";
    const bool any_movable = std::any_of(work_.pods().begin(), work_.pods().end(),
                                         [&](const auto& entry) { return MayMove(entry.second); });
    if (!any_movable) return "no pod holding GPUs may move";
    std::string why;
    if (!plan_.not_admitted.empty()) {
      why = "no pending pod can be admitted by evicting movable pods; ";
    } else if (!pending_.empty()) {
      why = "every pending pod fits without an eviction; ";
    } else {
      why = "no pod is pending; ";
    }
    return why +
           "no move of one movable pod to another node gains the minimum in either measure "
           "without worsening the other";
  }

  state::ClusterState work_;  // the copy every accepted step changes
  std::vector<model::Pod> pending_;
  PolicyDefaults defaults_;
  std::vector<model::DisruptionBudget> budgets_;  // what the plan's evictions leave of them
  // Each known Job's retries as a budget (what the plan's evictions leave), and the Job.
  std::vector<model::DisruptionBudget> job_budgets_;
  std::vector<const model::JobRetries*> jobs_;
  DefragLimits limits_;
  DemandMeasure measure_;
  std::map<std::string, const model::Pod*> specs_;
  std::set<std::string> moved_;  // evicted or admitted by the plan: not moved (again)
  DefragPlan plan_;
};

}  // namespace

model::Pod SpecToPlaceAgain(const model::Pod& pod) {
  namespace ann = model::annotations;
  static constexpr std::string_view kWrittenByPlacing[] = {
      ann::kAssignedNode,
      ann::kAssignedTime,
      ann::kDevicesToAllocate,
      ann::kDevicesAllocated,
      ann::kMigAllocations,
      ann::kBindPhase,
      ann::kBindTime,
      ann::kRequeuedAt,
      "kubectl.kubernetes.io/last-applied-configuration"};
  model::Pod spec = pod;
  for (std::string_view key : kWrittenByPlacing) spec.annotations.erase(std::string(key));
  spec.resource_version.clear();
  spec.init_container_statuses.clear();
  spec.init_container_statuses.shrink_to_fit();
  return spec;
}

bool RecreatedByController(std::string_view kind) {
  return kind == "ReplicaSet" || kind == "StatefulSet" || kind == "Job";
}

std::string WhyNotMovable(const state::PodReservation& reservation, const model::Pod* spec) {
  if (!reservation.held_gpus.empty()) return "its GPU allocation cannot be read";
  if (reservation.controller_kind.empty()) return "no controller recreates it";
  if (!RecreatedByController(reservation.controller_kind)) {
    return "its controller (" + reservation.controller_kind + ") does not recreate it elsewhere";
  }
  const std::string label(kNoDefragLabel);
  if (reservation.labels.contains(label) || (spec != nullptr && spec->labels.contains(label))) {
    return "labelled " + label;
  }
  if (spec == nullptr) return "no pod spec to place it again from";
  return "";
}

DefragPlan PlanDefrag(const state::ClusterState& state, std::span<const model::Pod> pending,
                      std::span<const model::Pod> running, const PolicyDefaults& defaults,
                      std::span<const model::DisruptionBudget> budgets,
                      std::span<const model::JobRetries> jobs, const DefragLimits& limits,
                      ObservedDemand observed) {
  return Planner(state, pending, running, defaults, budgets, jobs, limits, observed).Run();
}

}  // namespace tessera::sched
