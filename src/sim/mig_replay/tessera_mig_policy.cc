// The `tessera` policy: not a re-implementation. Each request becomes a model::Pod in MIG mode
// and goes through sched::Scheduler::Schedule (the code behind the extender's filter), which
// chooses node, GPU, profile and placement and reserves them in the cluster's ClusterState.

#include <map>

#include "core/sched/scheduler.h"
#include "sim/mig_replay/baselines.h"
#include "sim/mig_replay/tessera_request.h"
#include "sim/replay/tessera_policy.h"

namespace tessera::sim::mig_replay {
namespace {

class TesseraMigPolicy : public MigPolicy {
 public:
  TesseraMigPolicy(MigCluster& cluster, std::vector<TesseraMigRequest> requests, bool gpu_binpack,
                   const sched::NodePolicy& node_policy)
      : name_(gpu_binpack ? std::string(kPolicyTesseraGpuBinpack)
              : node_policy == sched::NodePolicy::Tessera()
                  ? std::string(kPolicyTessera)
                  : replay::TesseraPolicyName(node_policy)),
        cluster_(cluster),
        scheduler_(cluster.state(), Defaults(gpu_binpack, node_policy)),
        requests_(std::move(requests)) {
    // A pod that fits nowhere is rejected; why each node refused it is not needed.
    scheduler_.set_explain_failures(false);
  }

  std::string_view Name() const override { return name_; }

  Result<replay::PlaceOutcome> Place(MigCluster& cluster, const int& type, const std::string& key,
                                     std::mt19937_64& /*rng*/) override {
    const model::Pod pod =
        TesseraMigPod(key, cluster.workload().types[type].count, requests_[type]);
    // Schedule reserves the decision in the state it holds: cluster_.state().
    const sched::Decision d = scheduler_.Schedule(pod, cluster_.nodes(), 0);
    return d.scheduled() ? replay::PlaceOutcome::kPlaced : replay::PlaceOutcome::kRefused;
  }

 private:
  // The production defaults (tessera's node and GPU ranking); the variant only changes the
  // order among equal GPUs, as --gpu-scheduler-policy=tessera,binpack would.
  static sched::PolicyDefaults Defaults(bool gpu_binpack, const sched::NodePolicy& node_policy) {
    sched::PolicyDefaults d;
    d.node = node_policy;
    if (gpu_binpack) d.gpu = "tessera,binpack";
    return d;
  }

  std::string name_;
  MigCluster& cluster_;
  sched::Scheduler scheduler_;
  std::vector<TesseraMigRequest> requests_;  // per request type
};

}  // namespace

Result<std::vector<TesseraMigRequest>> ResolveTesseraRequests(const MigCluster& cluster) {
  // One GPU per distinct model is enough: the request must work on each of them.
  std::vector<const mig::GpuMigModel*> gpus;
  std::map<std::string, bool> seen;
  for (const state::NodeState* node : cluster.nodes()) {
    for (size_t d = 0; d < node->devices.size(); ++d) {
      if (seen.emplace(node->devices[d].type, true).second) gpus.push_back(&node->mig_models[d]);
    }
  }
  std::vector<TesseraMigRequest> requests;
  for (const auto& type : cluster.workload().types) {
    auto r = ResolveTesseraRequest(gpus, type);
    if (!r.ok()) return r.error();
    requests.push_back(r.value());
  }
  return requests;
}

Result<std::unique_ptr<MigPolicy>> MakeTesseraMigPolicy(MigCluster& cluster, bool gpu_binpack,
                                                        const sched::NodePolicy& node_policy) {
  auto requests = ResolveTesseraRequests(cluster);
  if (!requests.ok()) return requests.error();
  return std::unique_ptr<MigPolicy>(std::make_unique<TesseraMigPolicy>(
      cluster, std::move(requests.value()), gpu_binpack, node_policy));
}

}  // namespace tessera::sim::mig_replay
