#include "app/explain_command.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "adapters/kube/client.h"
#include "adapters/kube/config.h"
#include "app/cluster_snapshot.h"
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
  auto snapshot = ClusterSnapshot::List(client, std::move(config.value()), so, false);
  if (!snapshot.ok()) return Fail(snapshot.error().message);
  const auto answer = (*snapshot)->service().reads.Explain(o.pod, o.output == "json", o.node);
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
