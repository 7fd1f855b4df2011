// The /ui page in a real headless Chromium (Debian's `chromium`) against `tessera serve` over an
// embedded cluster: the DOM must show each MIG GPU's slices with the pods holding them, the
// shared GPU's tasks, and the pending pod with its reason.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "app/serve_process.h"
#include "core/codec/json_util.h"

namespace {

using tessera::codec::Json;
using tessera::testing::ServeProcess;
using tessera::testing::TempDir;

constexpr const char* kCluster = R"(
nodes:
  - name: mig-node
    gpus: [{ model: "A100-SXM4-40GB", mode: mig, uuid: GPU-mig }]
  - name: shared-node
    gpus: [{ model: "Tesla T4", memoryMiB: 15360, uuid: GPU-t4 }]
steps:
  - create:
      metadata:
        name: trainer
        annotations:
          hami.io/vgpu-node: mig-node
          hami.io/bind-phase: success
          hami.io/vgpu-devices-allocated: "GPU-mig,NVIDIA,19968,43:;"
          hami.io/vgpu-mig-allocations: '[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-mig","profile":"3g.20gb","placement":{"start":4,"size":4}}]'
      spec:
        nodeName: mig-node
        containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 19000 } } }]
  - create:
      metadata:
        name: notebook
        annotations:
          hami.io/vgpu-node: shared-node
          hami.io/bind-phase: success
          hami.io/vgpu-devices-allocated: "GPU-t4,NVIDIA,12000,50:;"
      spec:
        nodeName: shared-node
        containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 12000, nvidia.com/gpucores: 50 } } }]
)";

// A shared-GPU pod larger than any GPU: it waits with CardInsufficientMemory.
constexpr const char* kWaitingFilter =
    R"({"Pod":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"waiting","namespace":"default","uid":"u-w","annotations":{"nvidia.com/vgpu-mode":"hami-core"}},"spec":{"containers":[{"name":"c0","resources":{"limits":{"nvidia.com/gpu":"1","nvidia.com/gpumem":"30000"}}}]}},"NodeNames":["mig-node","shared-node"]})";

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class UiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    std::ofstream(dir_.path() / "cluster.yaml") << kCluster;
    serve_ = std::make_unique<ServeProcess>(
        std::vector<std::string>{"--cluster", (dir_.path() / "cluster.yaml").string(),
                                 "--http-bind", "127.0.0.1:0"},
        dir_.path() / "serve.log");
    port_ = serve_->WaitForPort("tessera serve listening on 127.0.0.1:");
    ASSERT_FALSE(port_.empty()) << serve_->log();
  }

  TempDir dir_;
  std::unique_ptr<ServeProcess> serve_;
  std::string port_;
};

TEST_F(UiTest, ChromiumShowsSlicesTasksAndThePendingReason) {
  httplib::Client client("127.0.0.1", std::stoi(port_));
  auto filtered = client.Post("/filter", kWaitingFilter, "application/json");
  ASSERT_TRUE(filtered);
  ASSERT_NE(filtered->body.find("CardInsufficientMemory"), std::string::npos) << filtered->body;

  // Chromium runs the page's script (fetch /ui/state, draw) within its virtual time budget.
  std::string dom;
  tessera::testing::RunCommand(
      "chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 "
      "--user-data-dir=" +
          (dir_.path() / "chromium").string() + " --dump-dom http://127.0.0.1:" + port_ +
          "/ui 2>/dev/null",
      &dom);
  ASSERT_NE(dom.find("<html"), std::string::npos)
      << "no page from chromium (installed by scripts/install-deps.sh?)";
  // The A100's 8 memory slices: the 3g.20gb instance at 4 covers 4 of them, 4 are free.
  EXPECT_EQ(Count(dom, R"(data-pod="default/trainer" data-profile="3g.20gb" data-start="4")"), 4U)
      << dom;
  EXPECT_EQ(Count(dom, R"(class="slice free")"), 4U);
  EXPECT_NE(dom.find(R"(data-slices="8")"), std::string::npos);
  // The shared T4: its task and its holder.
  EXPECT_NE(dom.find("1/10 tasks: default/notebook"), std::string::npos);
  // The pending pod, with the filter's message.
  const size_t waiting = dom.find(R"(<li data-pod="default/waiting">)");
  ASSERT_NE(waiting, std::string::npos) << dom;
  EXPECT_NE(dom.find("CardInsufficientMemory", waiting), std::string::npos);
  EXPECT_NE(dom.find("2 nodes, 2 GPUs, 1 waiting"), std::string::npos);
}

TEST_F(UiTest, PageAndStateRefuseQueriesAndTheStateIsCompactJson) {
  httplib::Client client("127.0.0.1", std::stoi(port_));
  auto page = client.Get("/ui");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(page->body.find("http"), std::string::npos) << "the page loads nothing from elsewhere";
  auto refused = client.Get("/ui/state?node=x");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400);
  auto state = client.Get("/ui/state");
  ASSERT_TRUE(state);
  const Json j = Json::parse(state->body);
  ASSERT_EQ(j["nodes"].size(), 2U);
  EXPECT_EQ(j["kinds"].size(), 2U);  // one A100 in MIG mode, one shared T4
  const Json& node = j["nodes"][0];
  EXPECT_EQ(node["name"], "mig-node");
  // The node's pods, by namespace: [[namespace#, name...]].
  ASSERT_EQ(node["pods"].size(), 1U);
  EXPECT_EQ(j["strings"][node["pods"][0][0].get<size_t>()], "default");
  EXPECT_EQ(node["pods"][0][1], "trainer");
  const Json& mig = node["gpus"][0];
  EXPECT_EQ(mig[1], "GPU-mig");
  const Json& kind = j["kinds"][mig[2].get<size_t>()];
  EXPECT_EQ(j["strings"][kind[0].get<size_t>()], "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(kind[5], 8);  // memory slices
  ASSERT_EQ(mig[6].size(), 1U);
  EXPECT_EQ(mig[6][0][0], 0);  // the node's first pod, trainer
  EXPECT_EQ(j["strings"][mig[6][0][1].get<size_t>()], "3g.20gb");
  EXPECT_EQ(mig[6][0][2], 4);
  EXPECT_EQ(mig[6][0][3], 4);
  const Json& t4 = j["nodes"][1]["gpus"][0];
  EXPECT_EQ(t4[4], 12000);             // used MiB
  EXPECT_EQ(t4[7], Json::array({0}));  // notebook shares it
}

// The page polls: an unchanged state is a 304 without a body, a changed one a new ETag.
TEST_F(UiTest, StateCarriesAnETagAndAnswers304UntilSomethingChanges) {
  httplib::Client client("127.0.0.1", std::stoi(port_));
  auto first = client.Get("/ui/state");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200);
  const std::string etag = first->get_header_value("ETag");
  ASSERT_FALSE(etag.empty());
  EXPECT_EQ(first->get_header_value("Cache-Control"), "no-cache");
  auto same = client.Get("/ui/state", httplib::Headers{{"If-None-Match", etag}});
  ASSERT_TRUE(same);
  EXPECT_EQ(same->status, 304);
  EXPECT_TRUE(same->body.empty());
  // A pod that waits changes the state (the waiting list) and so the ETag.
  ASSERT_TRUE(client.Post("/filter", kWaitingFilter, "application/json"));
  auto changed = client.Get("/ui/state", httplib::Headers{{"If-None-Match", etag}});
  ASSERT_TRUE(changed);
  EXPECT_EQ(changed->status, 200);
  EXPECT_NE(changed->get_header_value("ETag"), etag);
  EXPECT_NE(changed->body.find("default/waiting"), std::string::npos);
}

}  // namespace
