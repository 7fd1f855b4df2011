#include "sim/mig_replay/policy.h"
#include "sim/replay/tessera_policy.h"

#include "sim/mig_replay/baselines.h"
#include "sim/mig_replay/hami_master.h"

namespace tessera::sim::mig_replay {

const std::vector<std::string>& AllPolicyNames() {
  static const std::vector<std::string> names = {
      std::string(kPolicyTessera),       std::string(kPolicyHami210),
      std::string(kPolicyHamiMaster),    std::string(kPolicyFirstFit),
      std::string(kPolicyBestFit),       std::string(kPolicyStatic1g),
      std::string(kPolicyStaticBalanced)};
  return names;
}

const std::vector<std::string>& KnownPolicyNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all = AllPolicyNames();
    // hami-master's rule for one instance; on the catalog's models it decides exactly as
    // hami-master (hami_master_test.cc), so it is no longer run by default.
    all.emplace_back(kPolicyLargestFreeRun);
    all.emplace_back(kPolicyTesseraGpuBinpack);
    return all;
  }();
  return names;
}

Result<std::unique_ptr<MigPolicy>> MakeMigPolicy(std::string_view name, MigCluster& cluster,
                                                 std::span<const sched::NodePolicy> node_policies) {
  if (name == kPolicyTessera) return MakeTesseraMigPolicy(cluster, false);
  for (const sched::NodePolicy& node_policy : node_policies) {
    if (name == replay::TesseraPolicyName(node_policy)) {
      return MakeTesseraMigPolicy(cluster, false, node_policy);
    }
  }
  if (name == kPolicyTesseraGpuBinpack) return MakeTesseraMigPolicy(cluster, true);
  if (name == kPolicyHami210) return MakeHamiPolicy(false);
  if (name == kPolicyHamiMaster) return MakeHamiMasterPolicy();
  if (name == kPolicyLargestFreeRun) return MakeHamiPolicy(true);
  if (name == kPolicyFirstFit) return MakeFirstFitPolicy();
  if (name == kPolicyBestFit) return MakeBestFitPolicy();
  if (name == kPolicyStatic1g) return MakeStaticPolicy(cluster, false);
  if (name == kPolicyStaticBalanced) return MakeStaticPolicy(cluster, true);
  std::string known;
  for (const auto& n : KnownPolicyNames()) known += (known.empty() ? "" : ", ") + n;
  return Error{"unknown MIG policy \"" + std::string(name) + "\" (known: " + known + ")"};
}

}  // namespace tessera::sim::mig_replay
