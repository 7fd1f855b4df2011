#include "app/explain_command.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "adapters/kube/client.h"
#include "adapters/kube/config.h"
#include "app/command_support.h"
#include "core/codec/json_util.h"
#include "core/mig/catalog.h"
#include "core/model/pod.h"
#include "core/sched/explain.h"
#include "scheduler/cluster_view.h"
#include "scheduler/read_views.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace tessera::app {
namespace {

int Fail(const std::string& message, int code = 1) {
  std::cerr << "tessera explain: " << message << "\n";
  return code;
}

// Explaining writes nothing: the one-shot view of a real cluster has no writer.
class ReadOnlyCluster : public scheduler::ClusterWriter {
 public:
  Status PatchPodAnnotations(const scheduler::PodRef&,
                             const scheduler::AnnotationChanges&) override {
    return Error{"explain writes nothing"};
  }
  Status BindPod(const scheduler::PodRef&, const std::string&,
                 const scheduler::BindingAnnotations&) override {
    return Error{"explain writes nothing"};
  }
  void RecordEvent(const scheduler::PodRef&, bool, const std::string&,
                   const std::string&) override {}
  Status LockNode(const std::string&, const scheduler::PodRef&) override { return Status::Ok(); }
  Status UnlockNode(const std::string&, const scheduler::PodRef&) override { return Status::Ok(); }
};

Result<sched::PolicyDefaults> Policy(sched::PolicyDefaults policy, const ExplainOptions& o) {
  if (Status s =
          sched::AddNodePolicyDefinitions(o.node_policy_definitions, &policy.defined_node_policies);
      !s.ok()) {
    return Error{"--define-node-policy: " + s.message()};
  }
  if (!o.node_policy.empty()) {
    auto np = sched::ParseNodePolicy(o.node_policy, policy.defined_node_policies);
    if (!np.ok()) return Error{"--node-scheduler-policy: " + np.error().message};
    policy.node = *np;
  }
  if (!o.gpu_policy.empty()) {
    if (auto gp = sched::ParseGpuPolicy(o.gpu_policy); !gp.ok()) {
      return Error{"--gpu-scheduler-policy: " + gp.error().message};
    }
    policy.gpu = o.gpu_policy;
  }
  return policy;
}

int ExplainScenario(const ExplainOptions& o) {
  auto catalog = mig::GpuModelCatalog::Builtin();
  if (!catalog.ok()) return Fail("built-in MIG table: " + catalog.error().message);
  auto scenario = sim::LoadScenarioFile(o.cluster, catalog.value());
  if (!scenario.ok()) return Fail(scenario.error().message);
  auto policy = Policy(scenario->policy, o);
  if (!policy.ok()) return Fail(policy.error().message, 2);
  sim::Simulator simulator(std::move(scenario.value()));
  simulator.RunAll();
  for (const model::Pod& pod : simulator.pending()) {
    if (pod.Key() != o.pod) continue;
    sched::ExplainLimits limits;
    limits.detail_node = o.node;
    const sched::Explanation e = sched::ExplainPod(simulator.state(), pod, *policy, limits);
    std::cout << (o.output == "json" ? sched::ExplanationToJson(e).dump(2) + "\n"
                                     : sched::FormatExplanation(e));
    return 0;
  }
  if (const state::PodReservation* r = simulator.state().pod(o.pod)) {
    std::cout << "pod " << o.pod << ": placed on node " << r->node << "\n";
    return 0;
  }
  return Fail("pod " + o.pod + " is not pending at the end of " + o.cluster);
}

// The items of a LIST answer, or an error naming what was listed.
Result<std::vector<codec::Json>> List(kube::Client& client, const std::string& path) {
  kube::Response r = client.Get(path);
  if (!r.ok()) return r.ToError("GET " + path);
  auto json = codec::ParseJson(r.body, "GET " + path);
  if (!json.ok()) return json.error();
  const codec::Json* items = codec::FindKey(*json, "items");
  if (items == nullptr || !items->is_array()) return Error{"GET " + path + ": no items list"};
  return std::vector<codec::Json>(items->begin(), items->end());
}

int ExplainCluster(const ExplainOptions& o) {
  auto config = LoadDeviceConfig(o.device_config);
  if (!config.ok()) return Fail(config.error().message, 2);
  scheduler::ServiceOptions so;
  auto policy = Policy(so.policy, o);
  if (!policy.ok()) return Fail(policy.error().message, 2);
  so.policy = *policy;
  auto cluster = kube::DiscoverConfig(o.kubeconfig);
  if (!cluster.ok()) return Fail(cluster.error().message);
  kube::Client client(std::move(cluster.value()));
  auto nodes = List(client, "/api/v1/nodes");
  if (!nodes.ok()) return Fail(nodes.error().message);
  auto pods =
      List(client, "/api/v1/pods?fieldSelector=status.phase!%3DSucceeded,status.phase!%3DFailed");
  if (!pods.ok()) return Fail(pods.error().message);
  auto quotas = List(client, "/api/v1/resourcequotas");
  if (!quotas.ok()) return Fail(quotas.error().message);
  ReadOnlyCluster writer;
  scheduler::ClusterView view(std::move(config.value()), so, writer);
  view.ReplaceNodes(*nodes);
  view.ReplaceQuotas(*quotas);
  view.ReplacePods(*pods);
  view.SetSynced(true);
  const auto answer = scheduler::ReadViews(view).Explain(o.pod, o.output == "json", o.node);
  if (answer.outcome != scheduler::ExplainResult::Outcome::kOk) return Fail(answer.body);
  std::cout << answer.body;
  return 0;
}

}  // namespace

int RunExplainCommand(const ExplainOptions& options) {
  if (auto valid = model::ValidatePodKey(options.pod); !valid.ok()) {
    return Fail("pod \"" + options.pod + "\": " + valid.message(), 2);
  }
  if (!options.cluster.empty() && !options.kubeconfig.empty()) {
    return Fail("--cluster and --kubeconfig are exclusive: one cluster source at a time", 2);
  }
  return options.cluster.empty() ? ExplainCluster(options) : ExplainScenario(options);
}

void AddExplainCommand(CLI::App& app) {
  auto* explain = app.add_subcommand(
      "explain", "Why a pending pod fits nowhere, per node and GPU, and what would make it fit");
  auto eo = std::make_shared<ExplainOptions>();
  explain->add_option("pod", eo->pod, "NAMESPACE/NAME")->required();
  explain->add_option("--cluster", eo->cluster, "A scenario file, run first as `simulate` runs it");
  explain->add_option("--kubeconfig", eo->kubeconfig,
                      "A real cluster (default: $KUBECONFIG, then in-cluster)");
  explain->add_option("--device-config,--device-config-file", eo->device_config,
                      "HAMi device-config.yaml (a real cluster)");
  explain->add_option("--node-scheduler-policy", eo->node_policy, "as for serve (default tessera)");
  explain->add_option("--define-node-policy", eo->node_policy_definitions, "as for serve");
  explain->add_option("--gpu-scheduler-policy", eo->gpu_policy, "as for serve (default tessera)");
  explain->add_option("--node", eo->node, "Show this node's GPUs in full");
  explain->add_option("--output,-o", eo->output, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  explain->callback([eo] { EndCommand(RunExplainCommand(*eo)); });
}

}  // namespace tessera::app
