// `tessera defrag`: the real program against scenario files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "app/serve_process.h"
#include "core/codec/json_util.h"

namespace tessera::app {
namespace {

namespace fs = std::filesystem;
using codec::Json;

int RunDefrag(const std::string& args, std::string* output) {
  return tessera::testing::RunTessera("defrag", args, output);
}

std::string MigExample() { return std::string(TESSERA_SOURCE_DIR) + "/examples/defrag-mig.yaml"; }

// Nothing pending: two shared GPUs, default/x (a Job's, with retries to spare) on node-a with
// 8000 MiB free, the unmovable default/v on node-b with 10000 free, and a 12000 MiB request seen
// (it ran and ended). Moving default/x to node-b leaves node-a a whole GPU free.
constexpr const char* kSharingScenario = R"(
jobs:
  - metadata: { name: x, uid: job-1 }
    spec: { backoffLimit: 6 }
    status: { failed: 1 }
nodes:
  - name: node-a
    gpus: [{ model: "Tesla T4", memoryMiB: 16000, uuid: GPU-a }]
  - name: node-b
    gpus: [{ model: "Tesla T4", memoryMiB: 16000, uuid: GPU-b }]
steps:
  - create:
      metadata: { name: big, annotations: { nvidia.com/use-gpuuuid: GPU-b } }
      spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 12000 } } }] }
  - create:
      metadata:
        name: x
        labels: { batch.kubernetes.io/controller-uid: job-1 }
        ownerReferences: [{ apiVersion: batch/v1, kind: Job, name: x, uid: job-1, controller: true }]
      spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 8000 } } }] }
  - delete: default/big
  - create:
      metadata: { name: v, annotations: { nvidia.com/use-gpuuuid: GPU-b } }
      spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 6000 } } }] }
)";
class DefragCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tessera-defrag-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "sharing.yaml") << kSharingScenario;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(DefragCommandTest, TextSaysWhatMovesWhereAndWhy) {
  std::string out;
  ASSERT_EQ(RunDefrag("--cluster " + MigExample(), &out), 0) << out;
  EXPECT_NE(out.find("dry run, nothing is evicted"), std::string::npos) << out;
  // worker-0 on node-a is labelled no-defrag: the worker on node-b's slice 0 moves instead.
  EXPECT_NE(out.find("1. evict default/worker-7 from node node-b: frees GPU-b 1g.24gb@0+3"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("placed again on node node-a: GPU-a 1g.24gb@6+3"), std::string::npos) << out;
  EXPECT_NE(out.find("makes room for default/trainer"), std::string::npos) << out;
  EXPECT_NE(out.find("admitted: default/trainer on node node-b (GPU-b 2g.48gb@0+6)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("default/worker-0: labelled tessera.io/no-defrag"), std::string::npos) << out;
}

// A scenario's PodDisruptionBudgets count: one that allows no disruption of the namespace's pods
// leaves nothing to move, and the plan says why.
TEST_F(DefragCommandTest, AScenariosDisruptionBudgetKeepsItsPodsInPlace) {
  std::ifstream example(MigExample());
  std::string yaml((std::istreambuf_iterator<char>(example)), std::istreambuf_iterator<char>());
  yaml +=
      "disruptionBudgets:\n"
      "  - { metadata: { name: all, namespace: default }, spec: { selector: {} }, status: { "
      "disruptionsAllowed: 0 } }\n";
  std::ofstream(dir_ / "budgeted.yaml") << yaml;
  std::string out;
  ASSERT_EQ(RunDefrag("--cluster " + (dir_ / "budgeted.yaml").string(), &out), 0) << out;
  EXPECT_EQ(out.find("1. evict"), std::string::npos) << out;
  EXPECT_NE(
      out.find("default/worker-7: PodDisruptionBudget default/all allows no more disruptions"),
      std::string::npos)
      << out;
  std::string bad;
  std::ofstream(dir_ / "bad-budget.yaml") << "nodes: []\ndisruptionBudgets: [{ spec: {} }]\n";
  EXPECT_EQ(RunDefrag("--cluster " + (dir_ / "bad-budget.yaml").string(), &bad), 1) << bad;
  EXPECT_NE(bad.find("disruptionBudgets[0]"), std::string::npos) << bad;
}

TEST_F(DefragCommandTest, JsonForTools) {
  std::string out;
  ASSERT_EQ(RunDefrag("--cluster " + MigExample() + " -o json", &out), 0) << out;
  const Json plan = Json::parse(out);
  EXPECT_EQ(plan["dryRun"], true);
  EXPECT_EQ(plan["mode"], "admit-pending");
  ASSERT_EQ(plan["steps"].size(), 1U) << out;
  const Json& step = plan["steps"][0];
  EXPECT_EQ(step["pod"], "default/worker-7");
  EXPECT_EQ(step["node"], "node-b");
  EXPECT_EQ(step["frees"][0]["profile"], "1g.24gb");
  EXPECT_EQ(step["frees"][0]["start"], 0);
  EXPECT_EQ(step["replacedNode"], "node-a");
  EXPECT_EQ(step["replacedOn"][0]["uuid"], "GPU-a");
  EXPECT_EQ(step["admits"], "default/trainer");
  EXPECT_EQ(plan["admitted"][0]["evicted"], Json::array({"default/worker-7"}));
  EXPECT_EQ(plan["limits"]["maxEvictions"], 4);
}

TEST_F(DefragCommandTest, MaxEvictionsZeroPlansNothing) {
  std::string out;
  ASSERT_EQ(RunDefrag("--cluster " + MigExample() + " --max-evictions 0 -o json", &out), 0) << out;
  const Json plan = Json::parse(out);
  EXPECT_EQ(plan["mode"], "nothing");
  EXPECT_TRUE(plan["steps"].empty());
  EXPECT_NE(plan["whyEmpty"].get<std::string>().find("max evictions 0"), std::string::npos) << out;
  EXPECT_EQ(plan["notAdmitted"]["default/trainer"], "the plan's evictions are spent");
}

TEST_F(DefragCommandTest, NothingPendingRaisesPlaceabilityAboveTheMinimum) {
  const std::string cluster = "--cluster " + (dir_ / "sharing.yaml").string();
  std::string out;
  ASSERT_EQ(RunDefrag(cluster + " -o json", &out), 0) << out;
  const Json plan = Json::parse(out);
  EXPECT_EQ(plan["mode"], "raise-placeability") << out;
  ASSERT_EQ(plan["steps"].size(), 1U) << out;
  EXPECT_EQ(plan["steps"][0]["pod"], "default/x");
  EXPECT_EQ(plan["steps"][0]["replacedNode"], "node-b");
  EXPECT_GE(plan["steps"][0]["fragmentationDropGpus"].get<double>(), 0.1);
  // default/v has no controller: it never moves.
  EXPECT_EQ(plan["unmovable"]["default/v"], "no controller recreates it");
  std::string stricter;
  ASSERT_EQ(RunDefrag(cluster + " --min-fragmentation-drop 5 -o json", &stricter), 0) << stricter;
  EXPECT_EQ(Json::parse(stricter)["mode"], "nothing") << stricter;
}

// The scenario's Job says how many retries an eviction may use: with backoffLimit 0 its pod
// stays, and the plan says why.
TEST_F(DefragCommandTest, AJobWithoutRetriesToSpareKeepsItsPod) {
  std::string scenario = kSharingScenario;
  scenario.replace(scenario.find("backoffLimit: 6"), 15, "backoffLimit: 0");
  std::ofstream(dir_ / "no-retries.yaml") << scenario;
  std::string out;
  ASSERT_EQ(RunDefrag("--cluster " + (dir_ / "no-retries.yaml").string() + " -o json", &out), 0)
      << out;
  const Json plan = Json::parse(out);
  EXPECT_EQ(plan["mode"], "nothing") << out;
  EXPECT_EQ(plan["unmovable"]["default/x"],
            "its Job default/x would be left without a retry (backoffLimit 0, 1 failed) and its "
            "podFailurePolicy does not ignore evictions");
  // A malformed Job is named with its field.
  scenario.replace(scenario.find("failed: 1"), 9, "failed: -3");
  std::ofstream(dir_ / "bad.yaml") << scenario;
  std::string bad;
  EXPECT_EQ(RunDefrag("--cluster " + (dir_ / "bad.yaml").string(), &bad), 1) << bad;
  EXPECT_NE(bad.find("jobs[0]: Job default/x: status.failed"), std::string::npos) << bad;
}

TEST_F(DefragCommandTest, BadFlagsAreRefused) {
  std::string zero_gain;
  EXPECT_EQ(RunDefrag("--cluster " + MigExample() + " --min-gain 0", &zero_gain), 2) << zero_gain;
  EXPECT_NE(zero_gain.find("--min-gain"), std::string::npos) << zero_gain;
  // Without --cluster the cluster is a real one: with no configuration to find, it says where it
  // looked.
  std::string no_cluster;
  EXPECT_NE(RunDefrag("", &no_cluster), 0) << no_cluster;
  EXPECT_NE(no_cluster.find("no Kubernetes configuration found (--kubeconfig"), std::string::npos)
      << no_cluster;
  std::string both;
  EXPECT_EQ(RunDefrag("--cluster a.yaml --kubeconfig b", &both), 2) << both;
  EXPECT_NE(both.find("exclusive"), std::string::npos) << both;
  std::string missing;
  EXPECT_EQ(RunDefrag("--cluster /nonexistent/scenario.yaml", &missing), 1) << missing;
  EXPECT_NE(missing.find("tessera defrag: /nonexistent/scenario.yaml"), std::string::npos)
      << missing;
}

}  // namespace
}  // namespace tessera::app
