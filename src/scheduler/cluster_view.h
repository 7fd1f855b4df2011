#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/codec/json_util.h"
#include "core/common/result.h"
#include "core/config/scheduler_config.h"
#include "core/model/disruption_budget.h"
#include "core/model/job_retries.h"
#include "core/model/pod.h"
#include "core/sched/explain.h"
#include "core/sched/scheduler.h"
#include "core/state/cluster_state.h"
#include "core/state/node_liveness.h"
#include "core/state/quota_book.h"
#include "core/state/reservation_cache.h"
#include "scheduler/cluster_writer.h"
#include "scheduler/defrag_moves.h"
#include "scheduler/filter_answers.h"
#include "scheduler/filter_only_pods.h"
#include "scheduler/gpu_usage_table.h"
#include "scheduler/node_locks.h"
#include "scheduler/refused_pods.h"
#include "scheduler/service_metrics.h"
#include "scheduler/service_options.h"
#include "scheduler/ui_state.h"

namespace tessera::scheduler {

// The scheduler's view of the cluster and everything kept under its one lock: the cluster state
// and the scheduling core over it, the reservations between filter and bind, the feed of nodes,
// pods and quotas (informers or the embedded cluster), readiness, node liveness, and the maps
// keyed by what clients send (unbound, waiting and refused pods, filter answers, pods only
// filters named). The front ends (ExtenderVerbs, Housekeeping, ReadViews) call its operations,
// which hold the lock for in-memory work only; the front ends decode, encode and write to the
// cluster outside it. Thread-safe: every operation may be called from any thread at once.
class ClusterView {
 public:
  ClusterView(config::SchedulerConfig config, ServiceOptions options, ClusterWriter& writer,
              ServiceClocks clocks = {});

  // Fixed after construction: read without the lock.
  const config::SchedulerConfig& config() const { return config_; }
  const ServiceOptions& options() const { return options_; }
  const ServiceClocks& clocks() const { return clocks_; }
  ServiceMetrics& metrics() { return metrics_; }

  // ---- the cluster feed (cluster_view_feed.cc) ----------------------------------------------
  // Replace* delivers a complete (re)list; objects missing from it are gone. A malformed object
  // is logged through the metrics' decode-error counter and skipped: it never poisons other
  // nodes or pods.
  void ReplaceNodes(const std::vector<codec::Json>& nodes);
  void UpsertNode(const codec::Json& node);
  void DeleteNode(const codec::Json& node);
  void ReplacePods(const std::vector<codec::Json>& pods);
  void UpsertPod(const codec::Json& pod);
  void DeletePod(const codec::Json& pod);
  void UpsertNodeModel(const model::Node& node);
  void UpsertPodModel(const model::Pod& pod);
  // ResourceQuotas: their GPU limits (limits.nvidia.com/gpumem, limits.nvidia.com/gpucores).
  void ReplaceQuotas(const std::vector<codec::Json>& quotas);
  void UpsertQuota(const codec::Json& quota);
  void DeleteQuota(const codec::Json& quota);
  void UpsertQuotaModel(const model::ResourceQuota& quota);
  // PodDisruptionBudgets (policy/v1): what preempt counts violations by. Not part of readiness:
  // without them (no RBAC yet, the embedded cluster) preempt counts none.
  void ReplaceDisruptionBudgets(const std::vector<codec::Json>& budgets);
  void UpsertDisruptionBudget(const codec::Json& budget);
  void DeleteDisruptionBudget(const codec::Json& budget);
  void UpsertDisruptionBudgetModel(const model::DisruptionBudget& budget);
  // Jobs (batch/v1): how many retries an eviction of their pods may use (/defrag). Not part of
  // readiness: without them a plan moves no Job's pod.
  void ReplaceJobs(const std::vector<codec::Json>& jobs);
  void UpsertJob(const codec::Json& job);
  void DeleteJob(const codec::Json& job);
  void UpsertJobModel(const model::JobRetries& job);

  // ---- readiness ----------------------------------------------------------------------------
  // The cluster view is complete, and (with leader election) this replica leads.
  void SetSynced(bool synced);
  // A one-shot view (tessera explain, tessera defrag on a listed cluster) filters nothing, so its
  // demand mixes would stay empty: each of `pods` is observed as a filter would observe it.
  void ObserveDemandOf(const std::vector<codec::Json>& pods);
  void SetLeader(bool leader);
  bool Ready(std::string* why) const;
  // Ready, after waiting up to ServiceOptions::ready_wait for the first sync (a follower does
  // not wait). `why` names what is missing.
  bool WaitReady(std::string* why);

  // ---- for the extender verbs ---------------------------------------------------------------
  // Nodes in the state, read without the lock (the verbs' candidate limit).
  size_t known_nodes() const { return known_nodes_.load(); }

  struct Scheduled {
    sched::Decision decision;
    uint64_t serial = 0;  // the reservation the decision made (0: none)
  };
  // Filter's decision for `pod` among `candidates` (nullptr: every node), and what follows from
  // it: the pod's reservation (held until its bind, or expiry), its filter answer for bind, and
  // whether it waits. Pods the cluster feed has not shown are remembered as filter-only.
  Scheduled Schedule(const model::Pod& pod, const std::vector<std::string>* candidates);
  // A write for the reservation with this serial failed: its devices are released and the pod
  // must be filtered again.
  void ReleaseReservation(const std::string& key, uint64_t serial);

  struct BindStart {
    FilterAnswers::Check answer;  // what the pod's last filter said about the node
    // Only where the answer offered the node: the reservation's bind begins (expiry leaves it
    // alone from now on), or why it cannot.
    std::optional<Result<state::ReservationCache::BindTicket>> ticket;
    // No filter here had placed the pod (this replica restarted or took over the lead after
    // it), and it was placed on the node now, for this bind to write (PlaceForBindLocked).
    bool placed_here = false;
    // Such a pod, which no longer fits on the node: the bind is refused for that.
    bool does_not_fit_here = false;
  };
  // A bind of a pod no filter here placed is not refused for that alone: a pod the feed shows,
  // with the uid the bind names, is placed on the bind's node as its filter would have placed
  // it, if it fits there now. So a restart between filter and bind costs no retry, and nothing
  // is booked twice (the same decision under the same lock as a filter's).
  BindStart StartBind(const std::string& key, const std::string& uid, const std::string& node);
  // The bind with this serial went through: the pod is bound to `node`.
  void FinishBind(const std::string& key, const std::string& uid, const std::string& node,
                  uint64_t serial);
  // Prioritize: where filter would place `pod` (its admission defaults already applied), with
  // its own reservation set aside; reserves nothing.
  sched::Decision Preview(const model::Pod& pod, const std::vector<std::string>* candidates);
  // Preempt: a copy of each of `nodes` (ClusterState::Subset, in the order given; an unknown
  // node gives an empty copy), and the pods whose reservation still waits for its bind:
  // kube-scheduler may not count them on that node yet, so they are never named as victims.
  struct PreemptionCopies {
    std::vector<state::ClusterState> nodes;
    std::set<std::string> awaiting_bind;
    std::vector<model::DisruptionBudget> budgets;  // every PodDisruptionBudget known
  };
  PreemptionCopies CopyForPreemption(const std::vector<std::string>& nodes) const;
  // The webhook: what the namespace's GPU quota leaves (nullopt: no quota).
  std::optional<state::QuotaHeadroom> QuotaHeadroom(const std::string& ns) const;

  // ---- for housekeeping ---------------------------------------------------------------------
  // Forgets pods only filters named that none has named for reservation_timeout, and releases
  // the reservations no bind confirmed in time; returns those released.
  std::vector<state::ReservationCache::Expired> ExpireReservations();
  struct LivenessPass {
    size_t not_live = 0;  // nodes not live now
    // Nodes whose verdict changed, with the new reason ("": live again).
    std::vector<std::pair<std::string, std::string>> changed;
  };
  // Nodes whose allocatable GPU count has been 0 for node_liveness_grace become unusable, and
  // usable again once it is not (cluster_view_feed.cc).
  LivenessPass CheckNodeLiveness();
  // Waiting pods kube-scheduler will not ask about again on its own and that now fit on a node
  // of their last filter (ServiceOptions::requeue_after, requeue_batch). None on a replica that
  // is not synced and leading: a follower writes nothing.
  std::vector<PodRef> WaitingPodsThatNowFit();

  // ---- for the read views -------------------------------------------------------------------
  struct ExplainSubject {
    std::string placed_on;                     // the pod holds devices there (bound, or reserved)
    std::optional<sched::ExplainDraft> draft;  // a pending pod: its explanation, to finish
  };
  // What /explain needs of pod `key`, copied under the lock; `detail_node` is shown in full.
  // Neither set: not a pod this view knows.
  ExplainSubject PrepareExplanation(const std::string& key, const std::string& detail_node) const;
  // What /defrag plans from (sched::PlanDefrag), copied under the lock.
  struct DefragInputs {
    state::ClusterState state;
    // Pods the last filter placed nowhere, and this scheduler's unbound pods that hold nothing
    // (none filtered yet: a one-shot view), oldest first (by creation, then key).
    std::vector<model::Pod> pending;
    // The specs of bound pods holding devices whose controller recreates them: the pods a plan
    // may move (a pod is placed again from its spec).
    std::vector<model::Pod> movable;
    std::vector<model::DisruptionBudget> budgets;
    std::vector<model::JobRetries> jobs;
    sched::DemandMix demand;  // what the scheduler observed
    sched::MigDemandMix mig_demand;
    sched::PolicyDefaults policy;
  };
  DefragInputs CopyForDefrag() const;
  // /ui/state: the nodes that changed since the last call encoded, the rest reused.
  UiStateEncoder::Snapshot CollectUiState() const;
  // What the agents measured (tessera.io/gpu-usage), beside the state and never in it: a change
  // to that annotation alone changes nothing the scheduler decides by. Its own lock.
  const GpuUsageTable& gpu_usage() const { return usage_; }
  // What /metrics derives from the view, all read under one hold of the lock.
  struct MetricsReading {
    const state::ClusterState& state;
    const sched::MigDemandMix& mig_demand_mix;
    sched::MigFleetSignals mig_fleet_signals;               // as the decisions price it
    std::chrono::duration<double> oldest_reservation_wait;  // zero when none waits
    std::map<std::string, size_t> client_keyed_entries;
  };
  void ReadForMetrics(const std::function<void(const MetricsReading&)>& fn) const;
  // Runs `fn` on the state under the lock (debug views, tests).
  void WithState(const std::function<void(const state::ClusterState&)>& fn) const;
  // Entries of every map keyed by what clients send (pod keys of filter and bind requests,
  // their node lists), by map name: what tessera_client_keyed_entries{map} shows.
  std::map<std::string, size_t> ClientKeyedEntries() const;
  size_t pending_reservations() const;

 private:
  void NamedByFilterLocked(const model::Pod& pod);
  // StartBind's placement of a pod no filter here placed.
  enum class BindPlacement {
    kPlaced,      // reserved on the node, for the bind to write
    kDoesNotFit,  // this scheduler's pod, but the node has no room for it now
    kNotOurs,     // not a pod the feed shows with that uid and this scheduler's name
  };
  BindPlacement PlaceForBindLocked(const std::string& key, const std::string& uid,
                                   const std::string& node);
  // What the view keeps about a pod only filter requests named (not its devices: a reservation
  // expires by itself).
  void ForgetFilterOnlyPodLocked(const std::string& key);
  // What the pod's filter answered, for bind to check.
  void RecordAnswerLocked(const model::Pod& pod, const sched::Decision& decision,
                          const std::vector<std::string>* candidates);
  std::map<std::string, size_t> ClientKeyedEntriesLocked() const;
  void ApplyPodLocked(const model::Pod& pod);
  // ApplyPodLocked's devices and views; returns the node the pod freed devices on, if it did.
  std::optional<std::string> ObservePodLocked(const model::Pod& pod);
  void ForgetPodLocked(const std::string& key);
  // What the view keeps about a pod besides its devices (the waiting list, reported problems),
  // dropped when the pod is gone. `held_uid`: the uid its devices were held under.
  void ForgetPodViewsLocked(const std::string& key, const std::string& held_uid);
  void UpsertNodeLocked(const model::Node& node);
  void RemoveNodeLocked(const std::string& name);
  // Why the node may not take pods whatever its annotations say (not selected, not live); empty
  // when it may.
  std::string BlockReasonLocked(const std::string& node) const;

  // ---- pods nominated after preemption (cluster_view_nominations.cc) ------------------------
  // kube-scheduler nominates a preemptor to the node whose victims it deleted, and filters it
  // again once they are gone; any pod filtered in between would take the room they freed. So
  // the room is held for the nominated pod, as a reservation like its filter's, from the moment
  // it fits there: its own filter takes the reservation over, and one that no filter or bind
  // claims expires after reservation_timeout. Once per nomination (uid and node), so a hold
  // never outlives its timeout by being made again.
  struct Nomination {
    std::string uid;
    std::string node;
    int32_t priority = 0;
    uint64_t hold = 0;   // the held reservation's serial (0: none made)
    bool spent = false;  // held once, or no hold can help (not a GPU pod, malformed)
  };
  // The feed showed `pod`: its nomination is recorded, changed or dropped.
  void NoteNominationLocked(const model::Pod& pod);
  // The feed showed `pod` terminating, or `gone`: a defragmentation move it carries is noted.
  void NoteDefragMoveLocked(const model::Pod& pod, bool gone);
  // Filter's decision: on the node a defragmentation move wants a pod of this controller when
  // it fits there, else where the scheduler chooses.
  sched::Decision ScheduleLocked(const model::Pod& pod, const std::vector<std::string>* candidates);
  // The nomination of `key` ends; a hold its own filter has not taken over is released.
  void DropNominationLocked(const std::string& key);
  // Devices were freed on `node` ("": anywhere): nominated pods there that fit now get them.
  void HoldForNominatedLocked(const std::string& node);
  // Devices were freed: what waits for them may fit now.
  void DevicesFreedLocked(const std::string& node);

  config::SchedulerConfig config_;
  ServiceOptions options_;
  ClusterWriter& writer_;  // events about unreadable pods only (queued, never blocks)
  ServiceClocks clocks_;
  ServiceMetrics metrics_;

  mutable std::mutex mu_;
  std::condition_variable ready_cv_;
  state::ClusterState state_;
  sched::Scheduler scheduler_;
  // Reservations between filter and bind, pass-through pods, adoption of pods seen.
  state::ReservationCache reservations_;
  // Pods not bound to a node yet, as last seen (informer or filter): what /explain explains.
  std::map<std::string, model::Pod> unbound_;
  // PodDisruptionBudgets by namespace/name, for preempt.
  std::map<std::string, model::DisruptionBudget> budgets_;
  // Jobs by namespace/name: the retries /defrag may use.
  std::map<std::string, model::JobRetries> jobs_;
  // Pods only filters named: they expire and are capped (ServiceOptions::max_filter_only_pods).
  FilterOnlyPods filter_only_;
  // Each pod's last filter answer: bind goes only where it said.
  FilterAnswers filter_answers_;
  std::atomic<size_t> known_nodes_{0};          // nodes in state_, read without the lock
  std::map<std::string, std::string> waiting_;  // unbound pods the last filter placed nowhere: why
  RefusedPods refused_;  // the same pods: whether kube-scheduler will ask about them again
  mutable UiStateEncoder ui_encoder_;
  GpuUsageTable usage_;
  state::NodeLiveness liveness_;
  std::set<std::string> unselected_;         // nodes --node-label-selector leaves out
  std::set<std::string> not_live_;           // nodes the last liveness pass found without a plugin
  std::set<std::string> reported_problems_;  // "<uid>/<problem>": unreadable annotations, once
  // Bound pods holding devices whose controller recreates them, as last seen: what /defrag may
  // move and places again from (sched::RecreatedByController).
  std::map<std::string, model::Pod> movable_;
  // Where replacements of pods evicted by defragmentation runs are wanted.
  DefragMoves defrag_moves_;
  // HAMi's node locks as the feed and this replica's binds show them (--node-lock=hami).
  NodeLocks node_locks_;
  // Unbound pods with status.nominatedNodeName, by key (the feed's pods only).
  std::map<std::string, Nomination> nominations_;
  bool holds_deferred_ = false;  // a relist is being applied (ReplacePods)
  bool synced_ = false;
  bool leader_ = true;
};

}  // namespace tessera::scheduler
