#include "app/cluster_snapshot.h"

#include <utility>

namespace tessera::app {
namespace {

// The one-shot view writes nothing.
class ReadOnlyCluster : public scheduler::ClusterWriter {
 public:
  Status PatchPodAnnotations(const scheduler::PodRef&,
                             const scheduler::AnnotationChanges&) override {
    return Error{"a one-shot view writes nothing"};
  }
  Status BindPod(const scheduler::PodRef&, const std::string&,
                 const scheduler::BindingAnnotations&) override {
    return Error{"a one-shot view writes nothing"};
  }
  void RecordEvent(const scheduler::PodRef&, bool, const std::string&,
                   const std::string&) override {}
  Status LockNode(const std::string&, const scheduler::PodRef&) override { return Status::Ok(); }
  Status UnlockNode(const std::string&, const scheduler::PodRef&) override { return Status::Ok(); }
};

}  // namespace

Result<std::vector<codec::Json>> ListItems(kube::Client& client, const std::string& path) {
  kube::Response r = client.Get(path);
  if (!r.ok()) return r.ToError("GET " + path);
  auto json = codec::ParseJson(r.body, "GET " + path);
  if (!json.ok()) return json.error();
  const codec::Json* items = codec::FindKey(*json, "items");
  if (items == nullptr || !items->is_array()) return Error{"GET " + path + ": no items list"};
  return std::vector<codec::Json>(items->begin(), items->end());
}

Result<std::unique_ptr<ClusterSnapshot>> ClusterSnapshot::List(kube::Client& client,
                                                               config::SchedulerConfig config,
                                                               scheduler::ServiceOptions options,
                                                               bool budgets) {
  auto nodes = ListItems(client, "/api/v1/nodes");
  if (!nodes.ok()) return nodes.error();
  auto pods = ListItems(
      client, "/api/v1/pods?fieldSelector=status.phase!%3DSucceeded,status.phase!%3DFailed");
  if (!pods.ok()) return pods.error();
  auto quotas = ListItems(client, "/api/v1/resourcequotas");
  if (!quotas.ok()) return quotas.error();
  std::vector<codec::Json> pdbs;
  std::vector<codec::Json> jobs;
  if (budgets) {
    auto listed = ListItems(client, "/apis/policy/v1/poddisruptionbudgets");
    if (!listed.ok()) return listed.error();
    pdbs = std::move(listed.value());
    auto listed_jobs = ListItems(client, "/apis/batch/v1/jobs");
    if (!listed_jobs.ok()) return listed_jobs.error();
    jobs = std::move(listed_jobs.value());
  }
  std::unique_ptr<ClusterSnapshot> snapshot(new ClusterSnapshot());
  snapshot->writer_ = std::make_unique<ReadOnlyCluster>();
  snapshot->service_ = std::make_unique<scheduler::SchedulerService>(
      std::move(config), std::move(options), *snapshot->writer_);
  scheduler::ClusterView& view = snapshot->service_->view;
  view.ReplaceNodes(*nodes);
  view.ReplaceQuotas(*quotas);
  view.ReplaceDisruptionBudgets(pdbs);
  view.ReplaceJobs(jobs);
  view.ReplacePods(*pods);
  view.ObserveDemandOf(*pods);
  view.SetSynced(true);
  return snapshot;
}

}  // namespace tessera::app
