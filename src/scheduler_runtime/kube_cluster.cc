#include "scheduler_runtime/kube_cluster.h"

#include <malloc.h>

#include <spdlog/spdlog.h>

#include <ctime>

#include "core/codec/node_lock.h"
#include "core/common/strings.h"
#include "core/model/annotations.h"

namespace tessera::scheduler_runtime {

namespace ann = model::annotations;
using codec::Json;

namespace {

std::string Rfc3339Now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// RFC 3339 "2026-08-21T06:20:39Z" (UTC, as HAMi writes it) to Unix seconds; -1 if unparseable.
int64_t ParseRfc3339(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return -1;
  return static_cast<int64_t>(timegm(&tm));
}

std::string ObjectRv(const Json& obj) {
  const Json* meta = codec::FindKey(obj, "metadata");
  const Json* rv = meta != nullptr ? codec::FindKey(*meta, "resourceVersion") : nullptr;
  return rv != nullptr && rv->is_string() ? rv->get<std::string>() : "";
}

std::string ObjectAnnotation(const Json& obj, std::string_view key) {
  const Json* meta = codec::FindKey(obj, "metadata");
  const Json* anns = meta != nullptr ? codec::FindKey(*meta, "annotations") : nullptr;
  if (anns == nullptr || !anns->is_object()) return "";
  auto it = anns->find(std::string(key));
  return it != anns->end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

Result<std::unique_ptr<KubeCluster>> KubeCluster::Connect(const KubeClusterOptions& options) {
  auto config = kube::DiscoverConfig(options.kubeconfig);
  if (!config.ok()) return config.error();
  return WithConfig(options, std::move(config.value()), options.client);
}

std::unique_ptr<KubeCluster> KubeCluster::WithConfig(const KubeClusterOptions& options,
                                                     kube::ClusterConfig config,
                                                     kube::ClientOptions client_options) {
  return std::unique_ptr<KubeCluster>(
      new KubeCluster(options, std::move(config), std::move(client_options)));
}

KubeCluster::KubeCluster(KubeClusterOptions options, kube::ClusterConfig config,
                         kube::ClientOptions client_options)
    : options_(std::move(options)), client_(std::move(config), std::move(client_options)) {
  events_ = std::make_unique<kube::EventRecorder>(client_, options_.scheduler_name);
}

KubeCluster::~KubeCluster() { Stop(); }

void KubeCluster::Start(scheduler::ClusterView& view) {
  // spdlog creates its registry on first use; doing that here, before any thread starts, keeps
  // the threads below from racing on it (the library is not instrumented for TSan).
  spdlog::default_logger_raw();
  view.SetSynced(false);
  view.SetLeader(options_.leader_election == LeaderElectionMode::kNone);
  kube::InformerHandlers node_handlers;
  node_handlers.on_replace = [&view](const std::vector<Json>& objects) {
    view.ReplaceNodes(objects);
  };
  node_handlers.on_upsert = [&view](const Json& o) { view.UpsertNode(o); };
  node_handlers.on_delete = [&view](const Json& o) { view.DeleteNode(o); };
  nodes_ = std::make_unique<kube::Informer>(client_, "/api/v1/nodes", node_handlers);

  kube::InformerHandlers pod_handlers;
  pod_handlers.on_replace = [&view](const std::vector<Json>& objects) {
    view.ReplacePods(objects);
  };
  pod_handlers.on_upsert = [&view](const Json& o) { view.UpsertPod(o); };
  pod_handlers.on_delete = [&view](const Json& o) { view.DeletePod(o); };
  kube::InformerOptions pod_options;
  // Finished pods hold nothing; when a pod finishes, the watch reports it as deleted.
  pod_options.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
  pods_ = std::make_unique<kube::Informer>(client_, "/api/v1/pods", pod_handlers, pod_options);
  kube::InformerHandlers quota_handlers;
  quota_handlers.on_replace = [&view](const std::vector<Json>& objects) {
    view.ReplaceQuotas(objects);
  };
  quota_handlers.on_upsert = [&view](const Json& o) { view.UpsertQuota(o); };
  quota_handlers.on_delete = [&view](const Json& o) { view.DeleteQuota(o); };
  quotas_ = std::make_unique<kube::Informer>(client_, "/api/v1/resourcequotas", quota_handlers);
  // PodDisruptionBudgets, for /preempt's victims; not waited for (readiness does not need them,
  // and a Role without them only leaves preempt counting none).
  kube::InformerHandlers budget_handlers;
  budget_handlers.on_replace = [&view](const std::vector<Json>& objects) {
    view.ReplaceDisruptionBudgets(objects);
  };
  budget_handlers.on_upsert = [&view](const Json& o) { view.UpsertDisruptionBudget(o); };
  budget_handlers.on_delete = [&view](const Json& o) { view.DeleteDisruptionBudget(o); };
  budgets_ = std::make_unique<kube::Informer>(client_, "/apis/policy/v1/poddisruptionbudgets",
                                              budget_handlers);
  // Jobs, for the retries /defrag may use; not waited for either (without them no Job's pod
  // is moved).
  kube::InformerHandlers job_handlers;
  job_handlers.on_replace = [&view](const std::vector<Json>& objects) {
    view.ReplaceJobs(objects);
  };
  job_handlers.on_upsert = [&view](const Json& o) { view.UpsertJob(o); };
  job_handlers.on_delete = [&view](const Json& o) { view.DeleteJob(o); };
  jobs_ = std::make_unique<kube::Informer>(client_, "/apis/batch/v1/jobs", job_handlers);
  nodes_->Start();
  pods_->Start();
  quotas_->Start();
  budgets_->Start();
  jobs_->Start();
  events_->Start();
  sync_thread_ = std::thread([this, &view] { WatchSync(view); });

  if (options_.leader_election == LeaderElectionMode::kCampaign) {
    kube::LeaderElectionOptions lo;
    lo.lease_namespace = options_.lease_namespace;
    lo.lease_name = options_.lease_name;
    lo.identity = options_.identity;
    elector_ = std::make_unique<kube::LeaderElector>(
        client_, lo,
        [&view, id = options_.identity] {
          spdlog::info("leader election: {} now leads", id);
          view.SetLeader(true);
        },
        [&view, id = options_.identity] {
          spdlog::warn("leader election: {} stopped leading", id);
          view.SetLeader(false);
        });
    elector_->Start();
  } else if (options_.leader_election == LeaderElectionMode::kFollow) {
    follow_thread_ = std::thread([this, &view] { FollowLease(view); });
  }
}

void KubeCluster::WatchSync(scheduler::ClusterView& view) {
  // The initial lists (every node's and pod's JSON at once) leave the allocator holding far more
  // free memory than the view uses (at 5 000 nodes: 290 MiB free against 150 MiB in use,
  // docs/performance.md); it is handed back to the system once synced, and every minute after
  // (relists, large /metrics answers), so the resident size follows what is in use.
  constexpr int kTrimEveryTicks = 60 * 20;  // a minute of 50 ms ticks
  bool reported = false;
  int ticks = 0;
  while (!stopping_.load()) {
    const bool synced = nodes_->HasSynced() && pods_->HasSynced() && quotas_->HasSynced();
    if (synced && !reported) {
      spdlog::info("informers synced");
      view.SetSynced(true);
      reported = true;
      ticks = kTrimEveryTicks;  // trim now
    }
    if (reported && ++ticks >= kTrimEveryTicks) {
      ticks = 0;
      malloc_trim(0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Serve while the kube-scheduler next to us holds its Lease: its holderIdentity starts with our
// pod's hostname, and the record was renewed within the lease duration by our own clock.
void KubeCluster::FollowLease(scheduler::ClusterView& view) {
  const std::string path = "/apis/coordination.k8s.io/v1/namespaces/" + options_.lease_namespace +
                           "/leases/" + options_.lease_name;
  std::string last_record;
  auto last_change = std::chrono::steady_clock::now();
  bool leading = false;
  while (!stopping_.load()) {
    kube::Response r = client_.Get(path);
    bool lead = false;
    if (r.ok()) {
      auto lease = codec::ParseJson(r.body, "Lease " + options_.lease_name);
      if (lease.ok()) {
        const Json* spec = codec::FindKey(*lease, "spec");
        std::string holder;
        std::string renew;
        long long duration = 15;
        if (spec != nullptr) {
          (void)codec::ReadString(*spec, "holderIdentity", "Lease.spec", &holder);
          (void)codec::ReadString(*spec, "renewTime", "Lease.spec", &renew);
          (void)codec::ReadInt(*spec, "leaseDurationSeconds", "Lease.spec", 1, 3600, &duration);
        }
        const std::string record = holder + "|" + renew;
        const auto now = std::chrono::steady_clock::now();
        if (record != last_record) {
          last_record = record;
          last_change = now;
        }
        lead = !holder.empty() && StartsWith(holder, options_.identity) &&
               now - last_change < std::chrono::seconds(duration);
      }
    }
    if (lead != leading) {
      leading = lead;
      spdlog::info("leader election (follow {}): {}", options_.lease_name,
                   lead ? "our kube-scheduler leads" : "our kube-scheduler does not lead");
      view.SetLeader(lead);
    }
    for (int i = 0; i < 20 && !stopping_.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

void KubeCluster::Stop() {
  if (stopping_.exchange(true)) return;
  if (elector_) elector_->Stop();
  if (follow_thread_.joinable()) follow_thread_.join();
  if (sync_thread_.joinable()) sync_thread_.join();
  if (pods_) pods_->Stop();
  if (quotas_) quotas_->Stop();
  if (budgets_) budgets_->Stop();
  if (jobs_) jobs_->Stop();
  if (nodes_) nodes_->Stop();
  if (events_) events_->Stop();
}

Status KubeCluster::PatchPodAnnotations(const scheduler::PodRef& pod,
                                        const scheduler::AnnotationChanges& changes) {
  Json annotations = Json::object();
  for (const auto& [k, v] : changes) {
    annotations[k] = v ? Json(*v) : Json(nullptr);
  }
  Json metadata = {{"annotations", annotations}};
  // The UID makes the patch fail on a different pod that reuses the name.
  if (!pod.uid.empty()) metadata["uid"] = pod.uid;
  auto r = kube::MergePatchPodMetadata(client_, pod.ns, pod.name, metadata);
  if (!r.ok()) return Error{r.error().message};
  return Status::Ok();
}

Status KubeCluster::BindPod(const scheduler::PodRef& pod, const std::string& node,
                            const scheduler::BindingAnnotations& annotations) {
  return kube::BindPod(client_, pod.ns, pod.name, pod.uid, node, annotations);
}

void KubeCluster::RecordEvent(const scheduler::PodRef& pod, bool warning, const std::string& reason,
                              const std::string& message) {
  events_->Record(kube::PodEvent(pod.ns, pod.name, pod.uid, warning, reason, message));
}

// HAMi's node lock (hami-protocol.md 6.2): "<RFC3339>,<ns>,<name>", taken with a
// resourceVersion-guarded merge patch; stale (older than the timeout) or dangling locks are taken
// over.
Status KubeCluster::LockNode(const std::string& node, const scheduler::PodRef& pod) {
  const std::string path = "/api/v1/nodes/" + node;
  for (int attempt = 0; attempt < 5; ++attempt) {
    kube::Response r = client_.Get(path);
    if (!r.ok()) return r.ToError("node " + node);
    auto obj = codec::ParseJson(r.body, "node " + node);
    if (!obj.ok()) return obj.error();
    const std::string current = ObjectAnnotation(*obj, ann::kNodeLock);
    const auto lock = codec::ParseNodeLock(current);
    if (!current.empty() && !(lock && lock->HeldBy(pod.ns, pod.name))) {
      // An unreadable lock counts as stale: nobody could be told from it who holds the node.
      const int64_t when = lock ? ParseRfc3339(lock->time) : -1;
      const int64_t now = static_cast<int64_t>(std::time(nullptr));
      bool take_over = when < 0 || now - when > options_.node_lock_timeout.count();
      if (!take_over && !lock->legacy()) {
        kube::Response owner =
            client_.Get("/api/v1/namespaces/" + lock->ns + "/pods/" + lock->name);
        take_over = owner.status == 404;
      }
      if (!take_over) {
        return Error{"node " + node + " has been locked within " +
                     std::to_string(options_.node_lock_timeout.count()) +
                     "s: node lock contention"};
      }
    }
    Json metadata = {
        {"annotations",
         {{std::string(ann::kNodeLock), codec::FormatNodeLock(Rfc3339Now(), pod.ns, pod.name)}}}};
    auto patched = kube::MergePatchNodeMetadata(client_, node, metadata, ObjectRv(*obj));
    if (patched.ok()) return Status::Ok();
    if (patched.error().code != ErrorCode::kConflict) return patched.error();
  }
  return Error{"node " + node + ": node lock contention (the node kept changing)"};
}

Status KubeCluster::UnlockNode(const std::string& node, const scheduler::PodRef& pod) {
  const std::string path = "/api/v1/nodes/" + node;
  for (int attempt = 0; attempt < 5; ++attempt) {
    kube::Response r = client_.Get(path);
    if (r.status == 404) return Status::Ok();
    if (!r.ok()) return r.ToError("node " + node);
    auto obj = codec::ParseJson(r.body, "node " + node);
    if (!obj.ok()) return obj.error();
    const auto lock = codec::ParseNodeLock(ObjectAnnotation(*obj, ann::kNodeLock));
    if (!lock || !lock->HeldBy(pod.ns, pod.name)) return Status::Ok();
    Json metadata = {{"annotations", {{std::string(ann::kNodeLock), nullptr}}}};
    auto patched = kube::MergePatchNodeMetadata(client_, node, metadata, ObjectRv(*obj));
    if (patched.ok()) return Status::Ok();
    if (patched.error().code != ErrorCode::kConflict) return patched.error();
  }
  return Error{"node " + node + ": could not release the node lock (the node kept changing)"};
}

}  // namespace tessera::scheduler_runtime
