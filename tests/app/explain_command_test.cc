// `tessera explain`: the real program against a scenario file and against an API server.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "adapters/kube/fake_api_server.h"
#include "app/serve_process.h"
#include "core/codec/json_util.h"

namespace tessera::app {
namespace {

namespace fs = std::filesystem;
using codec::Json;

constexpr const char* kScenario = R"(
nodes:
  - name: node-a
    gpus: [{ model: "Tesla T4", memoryMiB: 8000, uuid: GPU-a }]
steps:
  - create:
      metadata: { name: first }
      spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 6000 } } }] }
  - create:
      metadata: { name: second }
      spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 4000 } } }] }
)";

int RunExplain(const std::string& args, std::string* output) {
  return tessera::testing::RunTessera("explain", args, output);
}

class ExplainCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tessera-explain-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "cluster.yaml") << kScenario;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// An A100-40GB in MIG mode whose 7g.40gb is taken, and a namespace whose quota a second pod
// would exceed: the near miss and the quota remedy, through the real program.
constexpr const char* kMigQuotaScenario = R"(
nodes:
  - name: mig-a
    gpus: [{ model: "NVIDIA A100-SXM4-40GB", mode: mig, uuid: GPU-m }]
  - name: share-a
    gpus: [{ model: "Tesla T4", memoryMiB: 16000, uuid: GPU-s }]
quotas:
  - namespace: apps
    name: gpu-quota
    hard: { limits.nvidia.com/gpumem: 10000 }
steps:
  - create:
      metadata: { name: whole, annotations: { nvidia.com/vgpu-mode: mig } }
      spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 40000 } } }] }
  - create:
      metadata: { name: rounded, annotations: { nvidia.com/vgpu-mode: mig } }
      spec: { containers: [{ name: main, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 20000 } } }] }
  - create:
      metadata: { name: llm-1, namespace: apps }
      spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 8000 } } }] }
  - create:
      metadata: { name: llm-2, namespace: apps }
      spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 4000 } } }] }
)";

TEST_F(ExplainCommandTest, NearMissAndQuotaAreSaidInTheUsersWords) {
  std::ofstream(dir_ / "mig-quota.yaml") << kMigQuotaScenario;
  const std::string cluster = " --cluster " + (dir_ / "mig-quota.yaml").string();
  std::string out;
  ASSERT_EQ(RunExplain("default/rounded" + cluster, &out), 0) << out;
  EXPECT_NE(out.find("near miss: container main asks 20000 MiB, 32 MiB over 3g.20gb (19968 MiB) "
                     "on NVIDIA A100-SXM4-40GB, so it takes a 7g.40gb (40192 MiB): ask at most "
                     "19968 MiB to fit 3g.20gb"),
            std::string::npos)
      << out;

  std::string quota;
  ASSERT_EQ(RunExplain("apps/llm-2" + cluster, &quota), 0) << quota;
  EXPECT_NE(quota.find("ResourceQuota gpu-quota limits.nvidia.com/gpumem: 8000 used + 4000 asked = "
                       "12000 > 10000 MiB (exceeded by 2000 MiB)"),
            std::string::npos)
      << quota;
  EXPECT_NE(quota.find("what would make it fit: free 2000 MiB of namespace apps's quota, or raise "
                       "it (apps/llm-1 leaving does)"),
            std::string::npos)
      << quota;
  EXPECT_EQ(quota.find("leaving node"), std::string::npos) << quota;
}

TEST_F(ExplainCommandTest, AScenarioPodThatWaitsIsExplainedWithWhatWouldMakeItFit) {
  std::string out;
  ASSERT_EQ(RunExplain("default/second --cluster " + (dir_ / "cluster.yaml").string(), &out), 0)
      << out;
  EXPECT_NE(out.find("pod default/second: fits nowhere now"), std::string::npos) << out;
  EXPECT_NE(out.find("GPU 0 GPU-a (NVIDIA-Tesla T4, hami-core): CardInsufficientMemory"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("1 pod leaving node node-a: default/first"), std::string::npos) << out;

  std::string json;
  ASSERT_EQ(
      RunExplain("default/second -o json --cluster " + (dir_ / "cluster.yaml").string(), &json), 0);
  Json j = Json::parse(json);
  EXPECT_EQ(j["remedy"]["pods"][0], "default/first");

  std::string placed;
  ASSERT_EQ(RunExplain("default/first --cluster " + (dir_ / "cluster.yaml").string(), &placed), 0);
  EXPECT_EQ(placed, "pod default/first: placed on node node-a\n");
}

// The explanation leads with a summary: what the request is per GPU model, the room per node,
// then the remedy, before any node's lines; JSON carries the same under "asks" and "room".
TEST_F(ExplainCommandTest, TheSummaryPerGpuModelComesFirstInTextAndJson) {
  const std::string cluster = " --cluster " + (dir_ / "cluster.yaml").string();
  std::string out;
  ASSERT_EQ(RunExplain("default/second" + cluster, &out), 0) << out;
  const size_t first_line_end = out.find('\n');
  ASSERT_NE(first_line_end, std::string::npos) << out;
  EXPECT_EQ(out.substr(first_line_end + 1, out.find("  node ") == std::string::npos
                                               ? std::string::npos
                                               : out.find("  node ") - first_line_end - 1),
            "  asks for 1 × 4000 MiB on Tesla T4\n"
            "  room now, in such devices per node (its GPUs each on its own, the quota aside): "
            "none anywhere\n"
            "what would make it fit: 1 pod leaving node node-a: default/first\n")
      << out;

  std::string json;
  ASSERT_EQ(RunExplain("default/second -o json" + cluster, &json), 0);
  const Json j = Json::parse(json);
  EXPECT_EQ(j["asks"]["summary"], "asks for 1 × 4000 MiB on Tesla T4");
  EXPECT_EQ(j["asks"]["devices"], 1);
  EXPECT_EQ(j["asks"]["byModel"][0]["gpuType"], "NVIDIA-Tesla T4");
  EXPECT_EQ(j["asks"]["byModel"][0]["memMiB"], 4000);
  EXPECT_EQ(j["nodes"][0]["room"], 0);
}

TEST_F(ExplainCommandTest, BadArgumentsAreRefusedWithAMessage) {
  std::string out;
  EXPECT_EQ(RunExplain("not-a-key --cluster " + (dir_ / "cluster.yaml").string(), &out), 2);
  EXPECT_NE(out.find("expected NAMESPACE/NAME"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(RunExplain("default/nobody --cluster " + (dir_ / "cluster.yaml").string(), &out), 1);
  EXPECT_NE(out.find("not pending"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(RunExplain("default/x --cluster a.yaml --kubeconfig b", &out), 2);
  EXPECT_NE(out.find("exclusive"), std::string::npos) << out;
}

// Policy flags as serve takes them; a bad one is a usage error (2).
TEST_F(ExplainCommandTest, NodePolicyFlagsMayDefineAndNameAPolicy) {
  const std::string cluster = " --cluster " + (dir_ / "cluster.yaml").string();
  std::string out;
  ASSERT_EQ(RunExplain("default/first --define-node-policy=unpack=hami-node-score:-1 "
                       "--node-scheduler-policy=unpack" +
                           cluster,
                       &out),
            0)
      << out;
  EXPECT_EQ(out, "pod default/first: placed on node node-a\n");
  out.clear();
  EXPECT_EQ(RunExplain("default/first --node-scheduler-policy=unpack" + cluster, &out), 2);
  EXPECT_NE(out.find("--node-scheduler-policy: unknown node scheduler policy \"unpack\""),
            std::string::npos)
      << out;
  out.clear();
  EXPECT_EQ(RunExplain("default/first --define-node-policy=unpack" + cluster, &out), 2);
  EXPECT_NE(out.find("--define-node-policy: node policy definition \"unpack\": expected "
                     "NAME=PLUGIN:WEIGHT"),
            std::string::npos)
      << out;
}

// Against an API server: nodes, pods and quotas are listed once; the pending pod is explained.
TEST_F(ExplainCommandTest, APendingPodOfARealClusterIsExplainedFromOneList) {
  kube::testing::FakeApiServer api;
  ASSERT_TRUE(api.running());
  const std::string reg =
      R"([{"id":"GPU-a","count":10,"devmem":8000,"devcore":100,"type":"NVIDIA-Tesla T4","health":true,"mode":"hami-core"}])";
  Json node{
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", "node-a"}, {"annotations", {{"hami.io/node-nvidia-register", reg}}}}},
      {"status", {{"allocatable", {{"nvidia.com/gpu", "10"}}}}}};
  auto pod = [](const std::string& name, int mem, bool running) {
    Json p{{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}}},
           {"spec",
            {{"containers",
              {{{"name", "c0"},
                {"resources",
                 {{"limits",
                   {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", std::to_string(mem)}}}}}}}}}},
           {"status", {{"phase", running ? "Running" : "Pending"}}}};
    if (running) {
      p["spec"]["nodeName"] = "node-a";
      p["metadata"]["annotations"] = {
          {"hami.io/vgpu-node", "node-a"},
          {"hami.io/bind-phase", "success"},
          {"hami.io/vgpu-devices-allocated", "GPU-a,NVIDIA," + std::to_string(mem) + ",0:;"}};
    }
    return p;
  };
  auto list = [](Json items) {
    return [items](const kube::testing::RecordedRequest&, httplib::Response& res) {
      res.set_content(Json{{"kind", "List"}, {"items", items}}.dump(), "application/json");
    };
  };
  api.On("GET", "/api/v1/nodes", list(Json::array({node})));
  api.On("GET", "/api/v1/pods",
         list(Json::array({pod("running", 6000, true), pod("waiting", 4000, false)})));
  api.On("GET", "/api/v1/resourcequotas", list(Json::array()));
  std::ofstream(dir_ / "kubeconfig")
      << "apiVersion: v1\nkind: Config\n"
      << "clusters: [{name: c, cluster: {server: \"" << api.url() << "\"}}]\n"
      << "users: [{name: u, user: {token: t}}]\n"
      << "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
      << "current-context: x\n";
  std::string out;
  ASSERT_EQ(RunExplain("default/waiting --kubeconfig " + (dir_ / "kubeconfig").string(), &out), 0)
      << out;
  EXPECT_NE(out.find("node node-a: 1/1 CardInsufficientMemory"), std::string::npos) << out;
  EXPECT_NE(out.find("held by default/running"), std::string::npos) << out;
  EXPECT_NE(out.find("1 pod leaving node node-a: default/running"), std::string::npos) << out;
  EXPECT_EQ(api.Count("GET", "/api/v1/pods"), 1U);
  EXPECT_EQ(api.Requests("GET", "/api/v1/pods")[0].Param("fieldSelector"),
            "status.phase!=Succeeded,status.phase!=Failed");
}

}  // namespace
}  // namespace tessera::app
