// The real `tessera` program started with the arguments HAMi's Helm chart gives its scheduler.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "app/serve_process.h"

namespace {

namespace fs = std::filesystem;
using tessera::testing::ServeProcess;
using tessera::testing::TempDir;

// The chart's default `nvidia` section of device-config.yaml (hami-protocol.md 10.2), abridged.
constexpr const char* kDeviceConfig = R"(nvidia:
  resourceCountName: nvidia.com/gpu
  resourceMemoryName: nvidia.com/gpumem
  resourceMemoryPercentageName: nvidia.com/gpumem-percentage
  resourceCoreName: nvidia.com/gpucores
  resourcePriorityName: nvidia.com/priority
  overwriteEnv: false
  defaultMemory: 0
  defaultCores: 0
  defaultGPUNum: 1
  deviceSplitCount: 10
  deviceMemoryScaling: 1
  deviceCoreScaling: 1
  gpuCorePolicy: default
  migProfileAllowlist:
  - models: [ "NVIDIA RTX PRO 6000 Blackwell Server Edition" ]
    profiles: [ "1g.24gb", "2g.48gb", "4g.96gb" ]
)";

// Runs `tessera serve ARGS` to the end; returns the exit code and fills `output`.
int RunServe(const std::string& args, std::string* output) {
  return tessera::testing::RunTessera("serve", args, output);
}

class ServeProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    const std::string cmd =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=tessera "
        "-addext subjectAltName=IP:127.0.0.1 -keyout " +
        (dir_.path() / "tls.key").string() + " -out " + (dir_.path() / "tls.crt").string() +
        " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl CLI missing?";
    std::ofstream(dir_.path() / "device-config.yaml") << kDeviceConfig;
  }
  std::string Path(const std::string& name) const { return (dir_.path() / name).string(); }
  std::string Scenario() const {
    return std::string(TESSERA_SOURCE_DIR) + "/examples/demo-mig.yaml";
  }

  TempDir dir_;
};

TEST_F(ServeProcessTest, StartsWithHamiChartArguments) {
  // HAMi's chart arguments verbatim, except: ports are 0 (free ones, read back from the log) and
  // the files live in a temp dir. The chart has no cluster source flag (HAMi runs in-cluster);
  // here --cluster adds an embedded cluster instead, because there is no API server. With
  // --cluster there is no Lease either: --leader-elect=true and the lease flags are accepted and
  // have no effect (logged), so leader election itself is tested in tests/serve and e2e/.
  // Without an API server nothing can check tokens: --read-auth=none says the network is trusted.
  ServeProcess serve({"--cluster", Scenario(), "--read-auth=none", "--http_bind=0.0.0.0:0",
                      "--cert_file=" + Path("tls.crt"), "--key_file=" + Path("tls.key"),
                      "--scheduler-name=hami-scheduler", "--metrics-bind-address=:0",
                      "--node-scheduler-policy=binpack", "--gpu-scheduler-policy=spread",
                      "--force-overwrite-default-scheduler=true",
                      "--device-config-file=" + Path("device-config.yaml"), "--leader-elect=true",
                      "--leader-elect-resource-name=hami-scheduler",
                      "--leader-elect-resource-namespace=hami-system", "--debug", "-v=4"},
                     Path("serve.log"));
  const std::string port = serve.WaitForPort("tessera serve listening on 0.0.0.0:");
  ASSERT_FALSE(port.empty()) << serve.log();
  // ":PORT" is every interface, as in HAMi.
  const std::string metrics_port = serve.WaitForPort("metrics listening on 0.0.0.0:");
  ASSERT_FALSE(metrics_port.empty()) << serve.log();
  EXPECT_NE(serve.log().find("--leader-elect: no effect with --cluster"), std::string::npos);
  // --debug -v=4: debug lines are printed.
  EXPECT_NE(serve.log().find("[debug]"), std::string::npos) << serve.log();

  httplib::SSLClient https("127.0.0.1", std::stoi(port));
  https.set_ca_cert_path(Path("tls.crt").c_str());
  https.enable_server_certificate_verification(true);
  auto ready = https.Get("/readyz");
  ASSERT_TRUE(ready) << httplib::to_string(ready.error());
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(ready->body, "ok");
  auto main_metrics = https.Get("/metrics");  // still on the main port too
  ASSERT_TRUE(main_metrics);
  EXPECT_EQ(main_metrics->status, 200);

  httplib::Client metrics("127.0.0.1", std::stoi(metrics_port));
  auto res = metrics.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("hami_gpu_memory_limit_bytes{"), std::string::npos) << res->body;
  EXPECT_NE(res->body.find("node=\"node-a\""), std::string::npos);
  EXPECT_NE(res->body.find("tessera_pending_reservations 0"), std::string::npos);
  // The metrics listener serves /metrics alone.
  auto other = metrics.Post("/filter", "{}", "application/json");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);

  EXPECT_EQ(serve.Stop(), 0) << serve.log();
}

TEST_F(ServeProcessTest, KlogVerbositySpellingsAndHamiOnlyFlagsAreAccepted) {
  ServeProcess serve(
      {"--cluster", Scenario(), "--http-bind=127.0.0.1:0", "-v", "2", "--legacy-metrics=true",
       "--profiling", "--node-lock-timeout=2m", "--node-lock-retry-timeout=28s", "--kube-qps=5",
       "--kube-burst=10", "--kube-timeout=30", "--node-label-selector=gpu=on",
       "--node-liveness-grace=0"},
      Path("serve.log"));
  const std::string port = serve.WaitForPort("tessera serve listening on 127.0.0.1:");
  ASSERT_FALSE(port.empty()) << serve.log();
  // -v below 4 leaves the level at info.
  EXPECT_EQ(serve.log().find("[debug]"), std::string::npos) << serve.log();
  EXPECT_NE(serve.log().find("--profiling: tessera serves no pprof routes"), std::string::npos);
  httplib::Client client("127.0.0.1", std::stoi(port));
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("GPUDeviceMemoryLimit{"), std::string::npos) << res->body;
  EXPECT_EQ(serve.Stop(), 0) << serve.log();
}

TEST_F(ServeProcessTest, MalformedNodeLabelSelectorIsAStartupError) {
  std::string output;
  const int rc = RunServe(
      "--cluster " + Scenario() + " --http-bind=127.0.0.1:0 --node-label-selector=gpu=on,nolabel",
      &output);
  EXPECT_EQ(rc, 1) << output;
  EXPECT_NE(output.find("--node-label-selector: \"nolabel\" is not key=value"), std::string::npos)
      << output;
  output.clear();
  EXPECT_EQ(RunServe("--cluster " + Scenario() + " --node-label-selector==x", &output), 1);
  EXPECT_NE(output.find("--node-label-selector: \"=x\" has an empty key"), std::string::npos)
      << output;
}

TEST_F(ServeProcessTest, BadDurationsAndVerbosityAreStartupErrors) {
  std::string output;
  EXPECT_EQ(RunServe("--cluster " + Scenario() + " --node-liveness-grace=soon", &output), 1);
  EXPECT_NE(output.find("--node-liveness-grace soon"), std::string::npos) << output;
  output.clear();
  EXPECT_NE(RunServe("--cluster " + Scenario() + " -v=loud", &output), 0);
  EXPECT_NE(output.find("--v"), std::string::npos) << output;
}

// Each resolution step of RunServeCommand names the flag it refuses, and nothing starts.
TEST_F(ServeProcessTest, ExclusiveSourcesAndUnknownChoicesAreStartupErrors) {
  std::string output;
  EXPECT_EQ(RunServe("--cluster " + Scenario() + " --kubeconfig=/nonexistent", &output), 1);
  EXPECT_NE(output.find("--kubeconfig and --cluster are exclusive"), std::string::npos) << output;
  output.clear();
  EXPECT_EQ(RunServe("--cluster " + Scenario() + " --node-lock=mutex", &output), 1);
  EXPECT_NE(output.find("--node-lock: want none or hami, got mutex"), std::string::npos) << output;
  output.clear();
  EXPECT_EQ(RunServe("--cluster " + Scenario() + " --write-placement=later", &output), 1);
  EXPECT_NE(output.find("--write-placement: want filter or bind, got later"), std::string::npos)
      << output;
  output.clear();
  EXPECT_EQ(RunServe("--cluster " + Scenario() + " --reservation-timeout=0s", &output), 1);
  EXPECT_NE(output.find("--reservation-timeout 0s: want a positive duration"), std::string::npos)
      << output;
  output.clear();
  EXPECT_EQ(RunServe("--cluster " + Scenario() + " --defrag-interval=often", &output), 1);
  EXPECT_NE(output.find("--defrag-interval"), std::string::npos) << output;
  output.clear();
  EXPECT_EQ(RunServe("--cluster " + Scenario() + " --defrag-step-timeout=0s", &output), 1);
  EXPECT_NE(output.find("--defrag-step-timeout 0s: want a positive duration"), std::string::npos)
      << output;
  output.clear();
  EXPECT_EQ(RunServe("--cluster " + Scenario() + " --defrag-max-evictions=-1", &output), 1);
  EXPECT_NE(output.find("--defrag-max-evictions"), std::string::npos) << output;
  output.clear();
  EXPECT_EQ(RunServe("--cluster /nonexistent/cluster.yaml", &output), 1);
  EXPECT_NE(output.find("/nonexistent/cluster.yaml"), std::string::npos) << output;
  EXPECT_EQ(output.find("listening"), std::string::npos) << output;
}

// Cluster data on an address others can reach needs someone to check tokens: without an API
// server (--cluster) serve refuses to start unless --read-auth=none says the network is trusted.
TEST_F(ServeProcessTest, ReadEndpointsOnTheNetworkWithNoWayToCheckTokensAreAStartupError) {
  std::string output;
  EXPECT_EQ(RunServe("--cluster " + Scenario() + " --http-bind=0.0.0.0:0", &output), 1);
  EXPECT_NE(output.find("--read-auth: 0.0.0.0:0 is reachable from the network"), std::string::npos)
      << output;
  output.clear();
  EXPECT_EQ(RunServe("--cluster " + Scenario() + " --read-auth=delegated", &output), 1);
  EXPECT_NE(output.find("--read-auth=delegated needs an API server"), std::string::npos) << output;
  output.clear();
  EXPECT_EQ(
      RunServe("--cluster " + Scenario() + " --http-bind=127.0.0.1:0 --extender-bind=0.0.0.0:0",
               &output),
      1);
  EXPECT_NE(output.find("--extender-bind 0.0.0.0:0: the extender verbs bind pods"),
            std::string::npos)
      << output;
  output.clear();
  EXPECT_EQ(RunServe("--cluster " + Scenario() + " --request-timeout=never", &output), 1);
  EXPECT_NE(output.find("--request-timeout never"), std::string::npos) << output;
}

TEST_F(ServeProcessTest, DefinedNodePoliciesAreLoggedAndMayBeTheDefault) {
  ServeProcess serve(
      {"--cluster", Scenario(), "--http-bind=127.0.0.1:0",
       "--define-node-policy=unpack=hami-node-score:-1", "--define-node-policy",
       "pack-frag=fragmentation:1,hami-node-score:0.2", "--node-scheduler-policy=pack-frag"},
      Path("serve.log"));
  const std::string port = serve.WaitForPort("tessera serve listening on 127.0.0.1:");
  ASSERT_FALSE(port.empty()) << serve.log();
  EXPECT_NE(serve.log().find("node policy: pack-frag=fragmentation:1,hami-node-score:0.2 (gpu "
                             "policy: tessera)"),
            std::string::npos)
      << serve.log();
  EXPECT_NE(serve.log().find("defined node policy: unpack=hami-node-score:-1"), std::string::npos)
      << serve.log();
  EXPECT_EQ(serve.Stop(), 0) << serve.log();
}

TEST_F(ServeProcessTest, BadNodePolicyDefinitionsAreStartupErrors) {
  std::string output;
  EXPECT_EQ(RunServe("--cluster " + Scenario() + " --define-node-policy=p=fullnes:1", &output), 1);
  EXPECT_NE(output.find("--define-node-policy: node policy definition \"p=fullnes:1\": unknown "
                        "plugin \"fullnes\""),
            std::string::npos)
      << output;
  output.clear();
  EXPECT_EQ(RunServe("--cluster " + Scenario() + " --node-scheduler-policy=p", &output), 1);
  EXPECT_NE(output.find("--node-scheduler-policy: unknown node scheduler policy \"p\""),
            std::string::npos)
      << output;
}

}  // namespace
