#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/codec/json_util.h"
#include "core/common/task_runner.h"
#include "core/config/scheduler_config.h"
#include "core/extender/admission_review.h"
#include "core/extender/extender_protocol.h"
#include "core/model/pod.h"
#include "core/sched/scheduler.h"
#include "core/state/cluster_state.h"
#include "core/state/node_liveness.h"
#include "core/state/reservation_cache.h"
#include "scheduler/cluster_writer.h"
#include "scheduler/filter_answers.h"
#include "scheduler/filter_only_pods.h"
#include "scheduler/refused_pods.h"
#include "scheduler/service_metrics.h"
#include "scheduler/ui_state.h"

namespace tessera::scheduler {

struct ServiceOptions {
  sched::PolicyDefaults policy;
  extender::WebhookOptions webhook;
  // A reservation made by filter that no bind confirms within this time is released.
  std::chrono::milliseconds reservation_timeout{std::chrono::seconds(60)};
  // How long filter waits for the first sync before answering with an Error.
  std::chrono::milliseconds ready_wait{std::chrono::seconds(10)};
  bool hami_node_lock = false;
  // Where the placement annotations are written. In filter (HAMi's behaviour, the default) the
  // pod carries its placement from the start and a restart between filter and bind rebuilds the
  // reservation from it. In bind, one merge patch carries placement and bind-phase together,
  // taking an API round trip off kube-scheduler's one-pod-at-a-time cycle; a restart between
  // filter and bind then costs that pod one more filter (docs/serve.md).
  bool write_placement_in_bind = false;
  // --node-label-selector (key=value,...): only matching nodes are registered; the others fail
  // with "node unregistered", as in HAMi's register loop. Empty: every node.
  std::map<std::string, std::string> node_selector{};
  // A registered node whose allocatable GPU count (nvidia.com/gpu) has been 0 this long gets no
  // new GPU pods (its device plugin is gone, hami-protocol.md 9). Zero turns the check off.
  std::chrono::seconds node_liveness_grace{60};
  // --requeue-after: a pod the filter placed nowhere is asked about again by kube-scheduler after
  // any cluster event, but kube-scheduler may see the event first and ask while this view still
  // holds the departed pod, and some changes it never sees (a quota raised, a reservation
  // expired, a node live again). A waiting pod refused before such a change, not filtered since
  // for this long, that now fits on a node of its last filter, gets tessera.io/requeued-at: an
  // update kube-scheduler answers by trying it again. Zero turns it off.
  std::chrono::milliseconds requeue_after{std::chrono::seconds(5)};
  // The most waiting pods one requeue pass evaluates (each is a filter without reasons).
  size_t requeue_batch = 32;
  // Threads for the filter phase (--filter-threads); nullptr: the request's own thread. Must
  // outlive the service.
  TaskRunner* filter_runner = nullptr;
  // Pods only filter requests named (the cluster feed has not shown them) are remembered until
  // no filter has named them for reservation_timeout, and at most this many, the least recently
  // named forgotten first (docs/serve.md, "Limits").
  size_t max_filter_only_pods = FilterOnlyPods::kDefaultMaxPods;
};

// Clocks are injectable so that tests can drive reservation expiry.
struct ServiceClocks {
  std::function<std::chrono::steady_clock::time_point()> steady = [] {
    return std::chrono::steady_clock::now();
  };
  std::function<int64_t()> unix_seconds = [] {
    return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count());
  };
};

// The extender's state machine: the cluster view fed by informers (or the embedded cluster), the
// scheduling core, and the reservations between filter and bind. Thread-safe: filter, bind,
// webhook and cluster events may arrive on any threads at once. The lock guards only in-memory
// work; writes to the cluster happen outside it, and a failed write undoes its reservation.
class ExtenderService {
 public:
  ExtenderService(config::SchedulerConfig config, ServiceOptions options, ClusterWriter& writer,
                  ServiceClocks clocks = {});

  // HTTP bodies in, HTTP bodies out. Errors travel in the protocol's Error fields.
  std::string Filter(std::string_view body);
  std::string Bind(std::string_view body);
  std::string Prioritize(std::string_view body);
  std::string Webhook(std::string_view body);

  // The cluster feed. Replace* delivers a complete (re)list; objects missing from it are gone.
  // A malformed object is logged through the metrics' decode-error counter and skipped: it never
  // poisons other nodes or pods.
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

  // Readiness: the cluster view is complete, and (with leader election) this replica leads.
  void SetSynced(bool synced);
  void SetLeader(bool leader);
  bool Ready(std::string* why) const;

  // Releases reservations that filter made and no bind confirmed in time; returns how many.
  size_t ExpireReservations();
  // The liveness pass (every few seconds, as HAMi's register loop): nodes whose allocatable GPU
  // count has been 0 for node_liveness_grace become unusable, and usable again once it is not.
  // Returns how many nodes are not live.
  size_t CheckNodeLiveness();
  // The requeue pass (every second, see ServiceOptions::requeue_after): writes
  // tessera.io/requeued-at on each waiting pod kube-scheduler will not retry on its own and that
  // now fits, and records a Normal event `Requeued`. Only the leader writes. Returns how many.
  size_t RequeueWaitingPods();

  // GET /explain?pod=NS/NAME: why a pending pod fits where it does or nowhere, per node and GPU,
  // and what would make it fit (sched::ExplainPod). The state is copied under the lock and
  // explained outside it, so the filter path is held up only for the copy.
  struct ExplainAnswer {
    int status = 200;
    std::string body;
    std::string content_type = "text/plain";
  };
  // `node`, when not empty, is shown with its GPUs in full whatever else is.
  ExplainAnswer Explain(std::string_view pod_key, bool json, const std::string& node = {}) const;

  // GET /ui/state: every node and GPU (MIG slice maps, shared use and holders) and the pods
  // waiting with the last filter's message, as compact JSON (scheduler/ui_state.h). Under the lock
  // only the nodes that changed since the last poll are encoded; the body is joined outside it
  // and reused while nothing changes. `etag` names the body (it changes when the body does, and
  // between processes).
  struct UiStateBody {
    std::shared_ptr<const std::string> json;
    std::string etag;
  };
  UiStateBody UiState() const;

  // A filter or prioritize request may name at most this many candidate nodes (NodeNames or
  // Nodes.items): twice the nodes the cluster view knows (kube-scheduler's view may be ahead of
  // ours), and never fewer than kMinCandidateLimit. Longer lists are refused before any work.
  static constexpr size_t kMinCandidateLimit = 1000;
  size_t candidate_limit() const;

  // Entries of every map keyed by what clients send (pod keys of filter and bind requests,
  // their node lists), by map name: what tessera_client_keyed_entries{map} shows.
  std::map<std::string, size_t> ClientKeyedEntries() const;
  // The body size this thread's request decoder keeps buffers for (see ExtenderArgsDecoder).
  static size_t DecodeBuffersRetainedOnThisThread();

  ServiceMetrics& metrics() { return metrics_; }
  // What /metrics adds to the counters, read under the lock: HAMi's GPU usage families, tessera's
  // placement families (PlacementFamilies, with the scheduler's MIG demand mix) and the age of
  // the oldest reservation still waiting for its bind.
  std::vector<prometheus::MetricFamily> StateFamilies() const;
  // Runs `fn` on the state under the lock (metrics, debug views).
  void WithState(const std::function<void(const state::ClusterState&)>& fn) const;
  size_t pending_reservations() const;

 private:
  extender::FilterResult FilterLocked(const extender::ExtenderArgs& args, const model::Pod& pod,
                                      uint64_t* serial, sched::Decision* decision);
  bool WaitReady(std::string* why);
  void ApplyPodLocked(const model::Pod& pod);
  void ForgetPodLocked(const std::string& key);
  // What the service keeps about a pod besides its devices (the waiting list, reported
  // problems), dropped when the pod is gone. `held_uid`: the uid its devices were held under.
  void ForgetPodViewsLocked(const std::string& key, const std::string& held_uid);
  // What the service keeps about a pod only filter requests named (not its devices: a
  // reservation expires by itself).
  void ForgetFilterOnlyPodLocked(const std::string& key);
  // Remembers that a filter named `pod`, which the feed may not know.
  void NamedByFilterLocked(const model::Pod& pod);
  // What the pod's filter answered, for bind to check.
  void RecordAnswerLocked(const model::Pod& pod, const sched::Decision& decision,
                          const std::vector<std::string>* candidates);
  // Why bind must not go ahead, from the pod's last filter answer; empty when it may. Sets
  // `already_bound` when the pod is bound to that node already.
  std::string BindRefusalLocked(const extender::BindingArgs& args, bool* already_bound) const;
  std::map<std::string, size_t> ClientKeyedEntriesLocked() const;
  void ReleaseIfSerial(const std::string& key, uint64_t serial);
  void UpsertNodeLocked(const model::Node& node);
  void RemoveNodeLocked(const std::string& name);
  // Why the node may not take pods whatever its annotations say (not selected, not live); empty
  // when it may.
  std::string BlockReasonLocked(const std::string& node) const;

  config::SchedulerConfig config_;
  ServiceOptions options_;
  ClusterWriter& writer_;
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
  // Pods only filters named: they expire and are capped (ServiceOptions::max_filter_only_pods).
  FilterOnlyPods filter_only_;
  // Each pod's last filter answer: bind goes only where it said.
  FilterAnswers filter_answers_;
  std::atomic<size_t> known_nodes_{0};          // nodes in state_, read without the lock
  std::map<std::string, std::string> waiting_;  // unbound pods the last filter placed nowhere: why
  RefusedPods refused_;  // the same pods: whether kube-scheduler will ask about them again
  mutable UiStateEncoder ui_encoder_;  // under mu_
  mutable std::mutex ui_mu_;           // the joined /ui body, after mu_ if both
  mutable std::shared_ptr<const std::string> ui_body_;
  mutable uint64_t ui_version_ = 0;
  std::string ui_etag_prefix_;  // differs between processes
  state::NodeLiveness liveness_;
  std::set<std::string> unselected_;         // nodes --node-label-selector leaves out
  std::set<std::string> not_live_;           // nodes the last liveness pass found without a plugin
  std::set<std::string> reported_problems_;  // "<uid>/<problem>": unreadable annotations, once
  bool synced_ = false;
  bool leader_ = true;
};

}  // namespace tessera::scheduler
