// The /ui page in a real headless Chromium (Debian's `chromium`) against `tessera serve` over an
// embedded cluster: the DOM must show each MIG instance as a block named by its pod, each share
// of a shared GPU with its memory and cores, distinct colours for similar pod names, the pending
// pods, and a pod's explanation (remedy first) with its remedy and free placements on the bars.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "app/serve_process.h"
#include "core/codec/json_util.h"

namespace {

using tessera::codec::Json;
using tessera::testing::ServeProcess;
using tessera::testing::TempDir;

// One running shared pod, as the scenario's create step gives it.
std::string SharedPod(const std::string& ns, const std::string& name, const std::string& node,
                      const std::string& uuid, int mib, int cores) {
  const std::string m = std::to_string(mib), c = std::to_string(cores);
  return "  - create:\n"
         "      metadata:\n"
         "        name: " +
         name + "\n        namespace: " + ns +
         "\n"
         "        annotations:\n"
         "          hami.io/vgpu-node: " +
         node +
         "\n"
         "          hami.io/bind-phase: success\n"
         "          hami.io/vgpu-devices-allocated: \"" +
         uuid + ",NVIDIA," + m + "," + c +
         ":;\"\n"
         "      spec:\n"
         "        nodeName: " +
         node +
         "\n"
         "        containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, "
         "nvidia.com/gpumem: " +
         m + ", nvidia.com/gpucores: " + c + " } } }]\n";
}

// A MIG A100 with one 3g.20gb instance at slice 4, a T4 with one share, and an A100-80GB shared
// by five pods whose names differ in one letter (serving/inf-1..5).
std::string Cluster() {
  std::string yaml = R"(
nodes:
  - name: mig-node
    gpus: [{ model: "A100-SXM4-40GB", mode: mig, uuid: GPU-mig }]
    annotations: { tessera.io/gpu-usage: "1767225600;GPU-mig=-,18000|4:-,17000" }
  - name: serving-node
    gpus: [{ model: "A100-SXM4-80GB", memoryMiB: 81920, uuid: GPU-a80 }]
  - name: shared-node
    gpus: [{ model: "Tesla T4", memoryMiB: 15360, uuid: GPU-t4 }]
    annotations: { tessera.io/gpu-usage: "1767225600;GPU-t4=37,12000" }
quotas:
  - namespace: team-q
    name: gpu
    hard: { limits.nvidia.com/gpumem: 1000 }
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
)";
  yaml += SharedPod("default", "notebook", "shared-node", "GPU-t4", 12000, 50);
  for (int i = 1; i <= 5; ++i) {
    yaml += SharedPod("serving", "inf-" + std::to_string(i), "serving-node", "GPU-a80", 16000, 20);
  }
  return yaml;
}

// A shared-GPU pod larger than any free GPU: it waits with CardInsufficientMemory; two of the
// inf pods leaving serving-node would make room.
constexpr const char* kWaitingFilter =
    R"({"Pod":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"waiting","namespace":"default","uid":"u-w","annotations":{"nvidia.com/vgpu-mode":"hami-core"}},"spec":{"containers":[{"name":"c0","resources":{"limits":{"nvidia.com/gpu":"1","nvidia.com/gpumem":"30000"}}}]}},"NodeNames":["mig-node","serving-node","shared-node"]})";
// Three MIG instances of 8000 MiB: the A100's four free slices take two, so it waits, and the
// explanation names the free starts.
constexpr const char* kTrioFilter =
    R"({"Pod":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"trio","namespace":"default","uid":"u-t","annotations":{"nvidia.com/vgpu-mode":"mig"}},"spec":{"containers":[{"name":"c0","resources":{"limits":{"nvidia.com/gpu":"3","nvidia.com/gpumem":"8000"}}}]}},"NodeNames":["mig-node","serving-node","shared-node"]})";

// Two shared GPUs of 1000 MiB on one node: no node has two, so it waits, though the T4 alone
// could take one of them.
constexpr const char* kDuoFilter =
    R"({"Pod":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"duo","namespace":"default","uid":"u-d","annotations":{"nvidia.com/vgpu-mode":"hami-core"}},"spec":{"containers":[{"name":"c0","resources":{"limits":{"nvidia.com/gpu":"2","nvidia.com/gpumem":"1000"}}}]}},"NodeNames":["mig-node","serving-node","shared-node"]})";

// 2000 MiB in a namespace whose quota allows 1000: the T4 would take it but for the quota.
constexpr const char* kOverQuotaFilter =
    R"({"Pod":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"over","namespace":"team-q","uid":"u-q","annotations":{"nvidia.com/vgpu-mode":"hami-core"}},"spec":{"containers":[{"name":"c0","resources":{"limits":{"nvidia.com/gpu":"1","nvidia.com/gpumem":"2000"}}}]}},"NodeNames":["mig-node","serving-node","shared-node"]})";

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The opening tags in `dom` carrying `attribute` (e.g. `data-pod="serving/inf-1"`).
std::vector<std::string> TagsWith(const std::string& dom, const std::string& attribute) {
  std::vector<std::string> tags;
  for (size_t at = dom.find(attribute); at != std::string::npos; at = dom.find(attribute, at + 1)) {
    const size_t open = dom.rfind('<', at);
    tags.push_back(dom.substr(open, dom.find('>', at) - open + 1));
  }
  return tags;
}

// An attribute's value in one tag; empty when it has none.
std::string Attribute(const std::string& tag, const std::string& name) {
  const size_t at = tag.find(" " + name + "=\"");
  if (at == std::string::npos) return "";
  const size_t from = at + name.size() + 3;
  return tag.substr(from, tag.find('"', from) - from);
}

class UiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    std::ofstream(dir_.path() / "cluster.yaml") << Cluster();
    serve_ = std::make_unique<ServeProcess>(
        std::vector<std::string>{"--cluster", (dir_.path() / "cluster.yaml").string(),
                                 "--http-bind", "127.0.0.1:0"},
        dir_.path() / "serve.log");
    port_ = serve_->WaitForPort("tessera serve listening on 127.0.0.1:");
    ASSERT_FALSE(port_.empty()) << serve_->log();
  }

  // The page at `path` as headless Chromium leaves it once its script has run (fetch
  // /ui/state and /explain, draw) within its virtual time budget.
  std::string Dom(const std::string& path) {
    std::string dom;
    tessera::testing::RunCommand(
        "chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 "
        "--user-data-dir=" +
            (dir_.path() / "chromium").string() + " --dump-dom 'http://127.0.0.1:" + port_ + path +
            "' 2>/dev/null",
        &dom);
    EXPECT_NE(dom.find("<html"), std::string::npos)
        << "no page from chromium (installed by scripts/install-deps.sh?)";
    return dom;
  }

  void FilterBoth() {
    httplib::Client client("127.0.0.1", std::stoi(port_));
    auto waiting = client.Post("/filter", kWaitingFilter, "application/json");
    ASSERT_TRUE(waiting);
    ASSERT_NE(waiting->body.find("CardInsufficientMemory"), std::string::npos) << waiting->body;
    auto trio = client.Post("/filter", kTrioFilter, "application/json");
    ASSERT_TRUE(trio);
    ASSERT_EQ(trio->body.find("\"NodeNames\":[\""), std::string::npos) << trio->body;
  }

  TempDir dir_;
  std::unique_ptr<ServeProcess> serve_;
  std::string port_;
};

TEST_F(UiTest, ChromiumShowsWhoHoldsEachInstanceAndShareAndThePendingPods) {
  FilterBoth();
  const std::string dom = Dom("/ui");
  // The A100's 8 memory slices: the 3g.20gb instance at 4 is one block, 4 slices wide, that
  // names its pod; the 4 other slices are free.
  const auto trainer = TagsWith(dom, R"(data-pod="default/trainer" data-profile="3g.20gb")");
  ASSERT_EQ(trainer.size(), 1U) << dom;
  EXPECT_EQ(Attribute(trainer[0], "data-start"), "4");
  EXPECT_EQ(Attribute(trainer[0], "data-size"), "4");
  EXPECT_NE(
      dom.find(R"(<span class="what">3g.20gb @4</span><span class="who">default/trainer</span>)"),
      std::string::npos)
      << dom;
  EXPECT_EQ(Count(dom, R"(class="slice free")"), 4U);
  EXPECT_NE(dom.find(R"(data-slices="8")"), std::string::npos);
  // A legend names the instance's holder too.
  EXPECT_NE(
      dom.find(
          R"(<span class="name">default/trainer</span><span class="share"> 3g.20gb at 4</span>)"),
      std::string::npos);
  // Full model names, on their own line.
  EXPECT_NE(dom.find("GPU 0: NVIDIA A100-SXM4-40GB (mig)"), std::string::npos) << dom;
  EXPECT_NE(dom.find("A100-SXM4-80GB"), std::string::npos);
  // The shared T4: memory and cores told apart, in MiB and percent, for the GPU and its holder.
  EXPECT_NE(dom.find("mem 12000 / 15360 MiB"), std::string::npos) << dom;
  EXPECT_NE(dom.find("cores 50 / 100%"), std::string::npos);
  EXPECT_NE(
      dom.find(
          R"(<span class="name">default/notebook</span><span class="share"> mem 12000 MiB, cores 50%</span>)"),
      std::string::npos);
  EXPECT_NE(dom.find("1/10 tasks"), std::string::npos);
  // The notebook's share drawn on both bars, named.
  EXPECT_EQ(Count(dom, R"(class="seg" data-pod="default/notebook")"), 2U);
  // The pending pods, with the filter's message.
  const size_t waiting = dom.find(R"(<li data-pod="default/waiting")");
  ASSERT_NE(waiting, std::string::npos) << dom;
  EXPECT_NE(dom.find("CardInsufficientMemory", waiting), std::string::npos);
  EXPECT_NE(dom.find(R"(<li data-pod="default/trio")"), std::string::npos);
  EXPECT_NE(dom.find("3 nodes, 3 GPUs, 2 waiting"), std::string::npos);
  // No explanation until a pod is chosen.
  EXPECT_NE(dom.find(R"(<div id="explain" hidden="")"), std::string::npos);
}

// The GPU's row in the page: from its `data-uuid` to the next GPU's.
std::string GpuRow(const std::string& dom, const std::string& uuid) {
  const size_t at = dom.find("data-uuid=\"" + uuid + "\"");
  if (at == std::string::npos) return "";
  const size_t next = dom.find("class=\"gpu", at);
  return dom.substr(at, next == std::string::npos ? std::string::npos : next - at);
}

// What the agents measured (tessera.io/gpu-usage) on the bars: the T4's utilisation and memory
// used, the MIG instance's memory used with its utilisation unknown, and a node whose agent
// reported nothing shown as unknown, never as 0.
TEST_F(UiTest, ChromiumShowsTheMeasuredUtilisationAndMemoryOnTheBars) {
  const std::string dom = Dom("/ui");
  const std::string t4 = GpuRow(dom, "GPU-t4");
  ASSERT_FALSE(t4.empty()) << dom;
  EXPECT_NE(t4.find(R"(<div class="meter measured util" data-value="37")"), std::string::npos)
      << t4;
  EXPECT_NE(t4.find(R"(<div class="what">util 37%</div>)"), std::string::npos) << t4;
  EXPECT_NE(t4.find(R"(<div class="what">used 12000 / 15360 MiB</div>)"), std::string::npos) << t4;
  EXPECT_NE(t4.find(R"(class="seg measured" style="width: 37%;")"), std::string::npos) << t4;

  const std::string mig = GpuRow(dom, "GPU-mig");
  EXPECT_NE(mig.find(R"(<span class="usage" data-util="" data-used="17000">used 17000 MiB, )"
                     R"(util unknown</span>)"),
            std::string::npos)
      << mig;
  EXPECT_NE(mig.find(R"(<div class="what">used 18000 / 40960 MiB</div>)"), std::string::npos)
      << mig;
  EXPECT_NE(mig.find(R"(<div class="what">util unknown</div>)"), std::string::npos) << mig;

  const std::string a80 = GpuRow(dom, "GPU-a80");
  ASSERT_FALSE(a80.empty());
  EXPECT_NE(a80.find(R"(<div class="meter measured util unknown" data-value="")"),
            std::string::npos)
      << a80;
  EXPECT_NE(a80.find(R"(<div class="what">used unknown</div>)"), std::string::npos) << a80;
  EXPECT_EQ(a80.find("util 0%"), std::string::npos) << a80;
}

// serving/inf-1..5 differ in one letter and share one GPU: five colours, hues at least 40
// degrees apart on the wheel.
TEST_F(UiTest, SimilarPodNamesOnOneGpuGetDistinctColours) {
  const std::string dom = Dom("/ui");
  std::map<int, int> hue;
  std::set<std::string> styles;
  for (int i = 1; i <= 5; ++i) {
    const auto segs =
        TagsWith(dom, "class=\"seg\" data-pod=\"serving/inf-" + std::to_string(i) + "\"");
    ASSERT_EQ(segs.size(), 2U) << dom;  // its memory and its cores
    const std::string h = Attribute(segs[0], "data-hue");
    ASSERT_FALSE(h.empty()) << segs[0];
    hue[i] = std::stoi(h);
    EXPECT_EQ(Attribute(segs[1], "data-hue"), h);  // one colour per pod
    styles.insert(
        Attribute(segs[0], "style").substr(Attribute(segs[0], "style").find("background")));
  }
  EXPECT_EQ(styles.size(), 5U) << "five different background colours";
  for (int a = 1; a <= 5; ++a) {
    for (int b = a + 1; b <= 5; ++b) {
      const int d = std::abs(hue[a] - hue[b]) % 360;
      EXPECT_GE(std::min(d, 360 - d), 40) << "inf-" << a << " and inf-" << b;
    }
  }
  // Each share labelled with its memory and cores.
  EXPECT_EQ(Count(dom, "mem 16000 MiB, cores 20%"), 5U);
  EXPECT_NE(dom.find("mem 80000 / 81920 MiB"), std::string::npos);
  EXPECT_NE(dom.find("cores 100 / 100%"), std::string::npos);
}

// /ui?pod=NS/NAME opens that pod's explanation: the remedy first, then each node's reasons, and
// the remedy's pods marked on the bars.
TEST_F(UiTest, APodsAddressOpensItsExplanationWithTheRemedyOnTheBars) {
  FilterBoth();
  httplib::Client client("127.0.0.1", std::stoi(port_));
  auto explained = client.Get("/explain?format=json&pod=default/waiting");
  ASSERT_TRUE(explained);
  const Json e = Json::parse(explained->body);
  ASSERT_TRUE(e.contains("remedy")) << e.dump();
  ASSERT_EQ(e["remedy"]["node"], "serving-node") << e.dump();
  std::set<std::string> leaving;
  for (const Json& p : e["remedy"]["pods"]) leaving.insert(p.get<std::string>());
  ASSERT_EQ(leaving.size(), 2U) << e.dump();

  const std::string dom = Dom("/ui?pod=default/waiting");
  const size_t panel = dom.find(R"(<div id="explain" data-pod="default/waiting">)");
  ASSERT_NE(panel, std::string::npos) << dom;
  EXPECT_NE(dom.find(R"(<span class="pod">default/waiting</span>)", panel), std::string::npos);
  // The remedy comes first, before any node's reasons.
  const size_t remedy =
      dom.find(R"(data-remedy="pods">make room: 2 pods leaving node serving-node)", panel);
  ASSERT_NE(remedy, std::string::npos) << dom;
  const size_t reasons = dom.find(R"(<div class="reasons">)", panel);
  ASSERT_NE(reasons, std::string::npos);
  EXPECT_LT(remedy, reasons);
  // Per node, per GPU: the failing check with its figures.
  EXPECT_NE(dom.find(R"(<div class="reason-node" data-node="serving-node">)", reasons),
            std::string::npos);
  EXPECT_NE(dom.find("CardInsufficientMemory", reasons), std::string::npos);
  EXPECT_NE(dom.find("held by serving/inf-1 (16000 MiB, 20%)", reasons), std::string::npos) << dom;
  // On the bars: the serving node is marked, and exactly the remedy's pods (their memory and
  // cores segments and their legend chips) are marked leaving.
  EXPECT_NE(dom.find(R"(<div class="node remedy-node" data-node="serving-node">)"),
            std::string::npos);
  for (int i = 1; i <= 5; ++i) {
    const std::string pod = "serving/inf-" + std::to_string(i);
    size_t marked = 0;
    for (const std::string& tag : TagsWith(dom, "data-pod=\"" + pod + "\"")) {
      if (tag.find("<div class=\"reason") == 0) continue;
      if (Attribute(tag, "class").find("leaving") != std::string::npos) ++marked;
    }
    EXPECT_EQ(marked, leaving.count(pod) ? 3U : 0U) << pod;
  }
}

// A pod kept out by its namespace's quota: the remedy is the quota (free or raise it), with each
// limit against the namespace's use and the request, the exceeded one marked.
TEST_F(UiTest, APodOverItsQuotaIsToldToFreeOrRaiseTheQuotaFirst) {
  httplib::Client client("127.0.0.1", std::stoi(port_));
  auto over = client.Post("/filter", kOverQuotaFilter, "application/json");
  ASSERT_TRUE(over);
  ASSERT_EQ(over->body.find("\"NodeNames\":[\""), std::string::npos) << over->body;
  auto explained = client.Get("/explain?format=json&pod=team-q/over");
  ASSERT_TRUE(explained);
  const Json e = Json::parse(explained->body);
  ASSERT_TRUE(e.contains("quota") && e["quota"]["blocks"] == true) << e.dump();

  const std::string dom = Dom("/ui?pod=team-q/over");
  const size_t panel = dom.find(R"(<div id="explain" data-pod="team-q/over">)");
  ASSERT_NE(panel, std::string::npos) << dom;
  const size_t remedy = dom.find(R"(data-remedy="quota">)", panel);
  ASSERT_NE(remedy, std::string::npos) << dom;
  EXPECT_NE(dom.find(e["quota"]["remedy"].get<std::string>(), remedy), std::string::npos);
  EXPECT_LT(remedy, dom.find(R"(<div class="reasons">)", panel));
  const size_t row =
      dom.find(R"(<tr class="exceeded"><td>gpu</td><td>limits.nvidia.com/gpumem</td>)", remedy);
  ASSERT_NE(row, std::string::npos) << dom;
  EXPECT_NE(dom.find("<td>2000 MiB</td><td>1000 MiB</td>", row), std::string::npos) << dom;
}

// The free placements a pod could take are marked on the MIG bar at their start slices.
TEST_F(UiTest, APodsExplanationMarksTheFreePlacementsItCouldTake) {
  FilterBoth();
  httplib::Client client("127.0.0.1", std::stoi(port_));
  auto explained = client.Get("/explain?format=json&pod=default/trio");
  ASSERT_TRUE(explained);
  const Json e = Json::parse(explained->body);
  std::set<std::string> starts;
  for (const Json& n : e["nodes"]) {
    for (const Json& g : n["gpus"]) {
      if (!g.contains("options")) continue;
      for (const Json& o : g["options"]) {
        for (const Json& s : o["starts"]) starts.insert(std::to_string(s.get<int>()));
      }
    }
  }
  ASSERT_FALSE(starts.empty()) << e.dump();

  const std::string dom = Dom("/ui?pod=default/trio");
  ASSERT_NE(dom.find(R"(<div id="explain" data-pod="default/trio">)"), std::string::npos) << dom;
  std::set<std::string> marked;
  for (const std::string& tag : TagsWith(dom, R"(class="slice free option")")) {
    EXPECT_FALSE(Attribute(tag, "data-option").empty()) << tag;
    marked.insert(Attribute(tag, "data-slice"));
  }
  EXPECT_EQ(marked, starts) << dom;
  EXPECT_EQ(Count(dom, R"(class="slice free")"), 4U - starts.size());

  // On shared GPUs: the free part of the memory bar of each GPU that passes every check.
  auto duo = client.Post("/filter", kDuoFilter, "application/json");
  ASSERT_TRUE(duo);
  ASSERT_NE(duo->body.find("NodeInsufficientDevice"), std::string::npos) << duo->body;
  const std::string shared = Dom("/ui?pod=default/duo");
  ASSERT_NE(shared.find(R"(<div id="explain" data-pod="default/duo">)"), std::string::npos)
      << shared;
  EXPECT_EQ(Count(shared, R"(<div class="seg free option">could take one device</div>)"), 1U)
      << shared;
  const size_t t4 = shared.find(R"(data-uuid="GPU-t4")", shared.find(R"(<div id="nodes">)"));
  ASSERT_NE(t4, std::string::npos);
  EXPECT_NE(shared.find("could take one device", t4), std::string::npos);
}

TEST_F(UiTest, PageTakesOnlyAPodStateNoQueryAndTheStateIsCompactJson) {
  httplib::Client client("127.0.0.1", std::stoi(port_));
  auto page = client.Get("/ui");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(page->body.find("http"), std::string::npos) << "the page loads nothing from elsewhere";
  EXPECT_EQ(page->body.find("innerHTML"), std::string::npos) << "cluster strings go in as text";
  // The page takes one pod=NS/NAME (whose explanation it opens), nothing else.
  auto pod = client.Get("/ui?pod=default/waiting");
  ASSERT_TRUE(pod);
  EXPECT_EQ(pod->status, 200);
  EXPECT_EQ(pod->body, page->body);
  auto with_plan = client.Get("/ui?pod=default/waiting&defrag=1");
  ASSERT_TRUE(with_plan);
  EXPECT_EQ(with_plan->status, 200);
  for (const char* bad : {"/ui?node=x", "/ui?pod=a/b&pod=c/d", "/ui?defrag=1&defrag=2"}) {
    auto refused_page = client.Get(bad);
    ASSERT_TRUE(refused_page);
    EXPECT_EQ(refused_page->status, 400) << bad;
  }
  auto refused = client.Get("/ui/state?node=x");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400);
  auto state = client.Get("/ui/state");
  ASSERT_TRUE(state);
  const Json j = Json::parse(state->body);
  ASSERT_EQ(j["nodes"].size(), 3U);
  EXPECT_EQ(j["kinds"].size(), 3U);  // an A100 in MIG mode, a shared A100-80GB, a shared T4
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
  ASSERT_EQ(j["nodes"][2]["name"], "shared-node");
  const Json& t4 = j["nodes"][2]["gpus"][0];
  EXPECT_EQ(t4[4], 12000);             // used MiB
  EXPECT_EQ(t4[7], Json::array({0}));  // notebook shares it
  ASSERT_EQ(t4[8].size(), 1U);
  EXPECT_EQ(j["strings"][t4[8][0].get<size_t>()], "12000/50");  // its MiB and cores
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

// The defragmentation plan on the bars (/ui?defrag=1): examples/defrag-mig.yaml, where moving
// default/worker-7 from node-b's slices 0-2 to node-a's free slices 6-8 lets default/trainer take a
// 2g.48gb at 0 on node-b.
TEST(UiDefragTest, ThePlansMovesAreShownOnTheSliceBars) {
  TempDir dir;
  ServeProcess serve({"--cluster", std::string(TESSERA_SOURCE_DIR) + "/examples/defrag-mig.yaml",
                      "--http-bind", "127.0.0.1:0"},
                     dir.path() / "serve.log");
  const std::string port = serve.WaitForPort("tessera serve listening on 127.0.0.1:");
  ASSERT_FALSE(port.empty()) << serve.log();
  std::string dom;
  tessera::testing::RunCommand(
      "chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 "
      "--user-data-dir=" +
          (dir.path() / "chromium").string() + " --dump-dom 'http://127.0.0.1:" + port +
          "/ui?defrag=1' 2>/dev/null",
      &dom);
  ASSERT_NE(dom.find("<html"), std::string::npos) << "no page from chromium";
  // The panel: the step, the pod it admits.
  const auto step = TagsWith(dom, R"(data-step-pod="default/worker-7")");
  ASSERT_EQ(step.size(), 1U) << dom;
  EXPECT_NE(dom.find("evict default/worker-7 from node-b (1g.24gb at 0); placed again on node-a "
                     "(1g.24gb at 6); makes room for default/trainer"),
            std::string::npos)
      << dom;
  EXPECT_EQ(TagsWith(dom, R"(data-admitted="default/trainer")").size(), 1U);
  // The evicted instance is marked leaving, and as the room the admitted pod takes.
  const auto evicted = TagsWith(dom, R"(data-defrag="evicted")");
  ASSERT_EQ(evicted.size(), 2U) << dom;  // its block and its legend chip
  const std::string block = evicted[0].find("block") != std::string::npos ? evicted[0] : evicted[1];
  EXPECT_EQ(Attribute(block, "data-pod"), "default/worker-7");
  EXPECT_NE(Attribute(block, "class").find("leaving"), std::string::npos) << block;
  EXPECT_EQ(Attribute(block, "data-defrag-replaced-by"), "default/trainer") << block;
  // Where worker-7 goes: node-a's free slices 6, 7 and 8.
  std::set<std::string> target_slices;
  for (const auto& tag : TagsWith(dom, R"(data-defrag-pod="default/worker-7")")) {
    if (Attribute(tag, "class").find("slice") != std::string::npos) {
      EXPECT_NE(Attribute(tag, "class").find("defrag-target"), std::string::npos) << tag;
      target_slices.insert(Attribute(tag, "data-slice"));
    }
  }
  EXPECT_EQ(target_slices, (std::set<std::string>{"6", "7", "8"})) << dom;
  EXPECT_NE(dom.find("defrag: default/worker-7 goes here (1g.24gb at 6)"), std::string::npos);
  EXPECT_NE(dom.find("defrag: default/trainer goes here (2g.48gb at 0)"), std::string::npos);
}

}  // namespace
