// `tessera defrag --kubeconfig`: the real program against a scripted API server. It plans on one
// listing as serve's /defrag does, and with --execute nominates, evicts through the Eviction API,
// records Events, and stops at a step that does not deliver.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

#include "adapters/kube/fake_api_server.h"
#include "app/serve_process.h"
#include "core/codec/json_util.h"

namespace tessera::app {
namespace {

namespace fs = std::filesystem;
using codec::Json;
using kube::testing::FakeApiServer;
using kube::testing::RecordedRequest;

Json Node(const std::string& name, const std::string& uuid) {
  const std::string reg = R"([{"id":")" + uuid +
                          R"(","count":10,"devmem":12000,"devcore":100,"type":"NVIDIA-Tesla T4",)"
                          R"("health":true,"mode":"hami-core"}])";
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"annotations", {{"hami.io/node-nvidia-register", reg}}}}},
          {"status", {{"allocatable", {{"nvidia.com/gpu", "10"}}}}}};
}

// A pod asking `mem` MiB of one GPU; bound to `node` on `uuid` when they are given, owned by the
// ReplicaSet with uid `owner` when it is given.
Json Pod(const std::string& name, int mem, const std::string& node = "",
         const std::string& uuid = "", const std::string& owner = "") {
  Json p{{"apiVersion", "v1"},
         {"kind", "Pod"},
         {"metadata",
          {{"name", name},
           {"namespace", "default"},
           {"uid", "uid-" + name},
           {"creationTimestamp", "2026-12-06T10:00:00Z"}}},
         {"spec",
          {{"schedulerName", "tessera-scheduler"},
           {"containers",
            {{{"name", "c0"},
              {"resources",
               {{"limits",
                 {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", std::to_string(mem)}}}}}}}}}},
         {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) {
    p["spec"]["nodeName"] = node;
    p["metadata"]["annotations"] = {
        {"hami.io/vgpu-node", node},
        {"hami.io/bind-phase", "success"},
        {"hami.io/vgpu-devices-allocated", uuid + ",NVIDIA," + std::to_string(mem) + ",10:;"}};
  }
  if (!owner.empty()) {
    p["metadata"]["ownerReferences"] = Json::array({{{"apiVersion", "apps/v1"},
                                                     {"kind", "ReplicaSet"},
                                                     {"name", "w-rs"},
                                                     {"uid", owner},
                                                     {"controller", true}}});
  }
  return p;
}

FakeApiServer::Handler Answer(const Json& body) {
  return [body](const RecordedRequest&, httplib::Response& res) {
    res.set_content(body.dump(), "application/json");
  };
}

Json List(Json items) { return Json{{"kind", "List"}, {"items", std::move(items)}}; }

// n1 and n2 with one 12000 MiB GPU each: default/w (a ReplicaSet's, 4000 MiB) on n1,
// default/bare (no controller, 6000) on n2, and default/p (10000), which fits on neither.
class DefragClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(api_.running());
    dir_ = fs::temp_directory_path() / ("tessera-defrag-cluster-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "kubeconfig")
        << "apiVersion: v1\nkind: Config\n"
        << "clusters: [{name: c, cluster: {server: \"" << api_.url() << "\"}}]\n"
        << "users: [{name: u, user: {token: t}}]\n"
        << "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
        << "current-context: x\n";
    api_.On("GET", "/api/v1/nodes",
            Answer(List(Json::array({Node("n1", "GPU-1"), Node("n2", "GPU-2")}))));
    api_.On("GET", "/api/v1/pods", Answer(List(Json::array({w_, bare_, Pod("p", 10000)}))));
    api_.On("GET", "/api/v1/resourcequotas", Answer(List(Json::array())));
    api_.On("GET", "/apis/policy/v1/poddisruptionbudgets", Answer(List(Json::array())));
    api_.On("GET", "/apis/batch/v1/jobs", Answer(List(Json::array())));
    api_.On("GET", "/api/v1/events", Answer(List(Json::array())));
    api_.On("GET", "/api/v1/namespaces/default/pods/w", Answer(w_));
    api_.On("GET", "/api/v1/namespaces/default/pods/p",
            [this](const RecordedRequest&, httplib::Response& res) {
              const bool placed = evicted_.load() && bind_after_eviction_;
              res.set_content((placed ? Pod("p", 10000, "n1", "GPU-1") : Pod("p", 10000)).dump(),
                              "application/json");
            });
    // The namespace's pods: w until it is evicted, then its replacement on n2.
    api_.On("GET", "/api/v1/namespaces/default/pods",
            [this](const RecordedRequest&, httplib::Response& res) {
              const Json now = evicted_.load() && bind_after_eviction_
                                   ? Pod("w-2", 4000, replacement_node_,
                                         "GPU-" + replacement_node_.substr(1), "rs-uid")
                                   : w_;
              res.set_content(List(Json::array({now, bare_})).dump(), "application/json");
            });
    api_.On("PATCH", "/api/v1/namespaces/default/pods/p/status", Answer(Pod("p", 10000)));
    api_.On("PATCH", "/api/v1/namespaces/default/pods/w", Answer(w_));
    api_.On("POST", "/api/v1/namespaces/default/pods/w/eviction",
            [this](const RecordedRequest&, httplib::Response& res) {
              evicted_ = true;
              res.status = 201;
              res.set_content(R"({"kind":"Status","status":"Success"})", "application/json");
            });
    api_.On("POST", "/api/v1/namespaces/default/events",
            [](const RecordedRequest&, httplib::Response& res) {
              res.status = 201;
              res.set_content("{}", "application/json");
            });
  }
  void TearDown() override { fs::remove_all(dir_); }

  int Defrag(const std::string& args, std::string* out) {
    return tessera::testing::RunTessera(
        "defrag", "--kubeconfig " + (dir_ / "kubeconfig").string() + " " + args, out);
  }
  std::vector<std::string> EventReasons() {
    std::vector<std::string> reasons;
    for (const auto& r : api_.Requests("POST", "/api/v1/namespaces/default/events")) {
      reasons.push_back(r.JsonBody()["reason"].get<std::string>() + " " +
                        r.JsonBody()["involvedObject"]["name"].get<std::string>());
    }
    return reasons;
  }

  FakeApiServer api_;
  fs::path dir_;
  const Json w_ = Pod("w", 4000, "n1", "GPU-1", "rs-uid");
  const Json bare_ = Pod("bare", 6000, "n2", "GPU-2");
  std::atomic<bool> evicted_{false};
  bool bind_after_eviction_ = true;
  std::string replacement_node_ = "n2";
};

// Before its eviction, the pod is marked with the node its replacement belongs on (serve's
// scheduler places the controller's next pod there), with its uid as a precondition.
void ExpectMarkedBeforeEviction(const FakeApiServer& api, const std::string& node) {
  const auto marks = api.Requests("PATCH", "/api/v1/namespaces/default/pods/w");
  ASSERT_EQ(marks.size(), 1U);
  EXPECT_EQ(marks[0].JsonBody()["metadata"]["annotations"]["tessera.io/defrag-moving-to"], node);
  EXPECT_EQ(marks[0].JsonBody()["metadata"]["uid"], "uid-w");
  bool marked = false;
  for (const auto& r : api.Requests()) {
    if (r.method == "PATCH" && r.path == "/api/v1/namespaces/default/pods/w") marked = true;
    if (r.path == "/api/v1/namespaces/default/pods/w/eviction") {
      EXPECT_TRUE(marked) << "evicted before it was marked";
    }
  }
}

TEST_F(DefragClusterTest, ADryRunPlansFromOneListingAndWritesNothing) {
  std::string out;
  ASSERT_EQ(Defrag("", &out), 0) << out;
  EXPECT_NE(out.find("defrag plan (dry run, nothing is evicted): 1 eviction, admitting 1 pending"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("1. evict default/w from node n1"), std::string::npos) << out;
  EXPECT_NE(out.find("placed again on node n2"), std::string::npos) << out;
  EXPECT_NE(out.find("default/bare: no controller recreates it"), std::string::npos) << out;
  EXPECT_EQ(api_.Count("GET", "/api/v1/pods"), 1U);
  EXPECT_EQ(api_.Count("GET", "/apis/policy/v1/poddisruptionbudgets"), 1U);
  EXPECT_EQ(api_.Count("GET", "/apis/batch/v1/jobs"), 1U);
  for (const auto& r : api_.Requests()) EXPECT_EQ(r.method, "GET") << r.path;
}

TEST_F(DefragClusterTest, ExecuteNominatesEvictsAndWaitsForThePodAndTheReplacement) {
  std::string out;
  ASSERT_EQ(Defrag("--execute --step-timeout 20", &out), 0) << out;
  EXPECT_NE(out.find("nominated default/p to node n1"), std::string::npos) << out;
  EXPECT_NE(out.find("admitted default/p on node n1; default/w placed again"), std::string::npos)
      << out;
  EXPECT_NE(out.find("done: 1 eviction"), std::string::npos) << out;
  const auto nominations = api_.Requests("PATCH", "/api/v1/namespaces/default/pods/p/status");
  ASSERT_EQ(nominations.size(), 1U);
  EXPECT_EQ(nominations[0].JsonBody()["status"]["nominatedNodeName"], "n1");
  EXPECT_EQ(nominations[0].JsonBody()["metadata"]["uid"], "uid-p");
  const auto evictions = api_.Requests("POST", "/api/v1/namespaces/default/pods/w/eviction");
  ASSERT_EQ(evictions.size(), 1U);
  const Json eviction = evictions[0].JsonBody();
  EXPECT_EQ(eviction["kind"], "Eviction");
  EXPECT_EQ(eviction["deleteOptions"]["preconditions"]["uid"], "uid-w");
  EXPECT_FALSE(eviction["deleteOptions"].contains("gracePeriodSeconds"));
  EXPECT_EQ(EventReasons(),
            (std::vector<std::string>{"TesseraDefragEvicted w", "TesseraDefragAdmitted p"}));
  ExpectMarkedBeforeEviction(api_, "n2");
}

// Nothing pending; default/bare holds 8000 MiB of n2 here, and default/big (10000 MiB, on n3)
// asks what neither n1 (8000 free) nor n2 (4000 free) could take again: moving w (4000) to n2
// fills n2 and frees n1 whole, a mode (b) plan. Carried out, the
// step delivers when w's replacement is bound on n2.
class DefragMoveTest : public DefragClusterTest {
 protected:
  void SetUp() override {
    DefragClusterTest::SetUp();
    api_.On(
        "GET", "/api/v1/nodes",
        Answer(List(Json::array({Node("n1", "GPU-1"), Node("n2", "GPU-2"), Node("n3", "GPU-3")}))));
    api_.On("GET", "/api/v1/pods",
            Answer(List(Json::array(
                {w_, Pod("bare", 8000, "n2", "GPU-2"), Pod("big", 10000, "n3", "GPU-3")}))));
  }
};

TEST_F(DefragMoveTest, AMoveThatRaisesPlaceabilityIsCarriedOutAndChecked) {
  std::string out;
  ASSERT_EQ(Defrag("--execute --step-timeout 20", &out), 0) << out;
  EXPECT_NE(out.find("to be executed): 1 move, raising placeability"), std::string::npos) << out;
  EXPECT_NE(out.find("moved default/w from node n1 to node n2"), std::string::npos) << out;
  EXPECT_NE(out.find("done: 1 eviction, 1 moved as planned"), std::string::npos) << out;
  EXPECT_EQ(api_.Count("PATCH", "/api/v1/namespaces/default/pods/p/status"), 0U);  // nobody
  EXPECT_EQ(api_.Count("POST", "/api/v1/namespaces/default/pods/w/eviction"), 1U);
  EXPECT_EQ(EventReasons(), (std::vector<std::string>{"TesseraDefragEvicted w"}));
  ExpectMarkedBeforeEviction(api_, "n2");
}

TEST_F(DefragMoveTest, AReplacementBoundElsewhereStopsTheRun) {
  replacement_node_ = "n1";
  std::string out;
  EXPECT_EQ(Defrag("--execute --step-timeout 20", &out), 1) << out;
  EXPECT_NE(out.find("stopped: the replacement of default/w was bound to node n1, not node n2 as "
                     "planned"),
            std::string::npos)
      << out;
  bind_after_eviction_ = false;
  evicted_ = false;
  EXPECT_EQ(Defrag("--execute --step-timeout 1", &out), 1) << out;
  EXPECT_NE(out.find("stopped: the move of default/w did not deliver within 1 s: no replacement "
                     "bound yet"),
            std::string::npos)
      << out;
}

// The pending pod is never bound: the step does not deliver, and the run stops with an error.
TEST_F(DefragClusterTest, AStepThatDoesNotDeliverStopsTheRun) {
  bind_after_eviction_ = false;
  std::string out;
  EXPECT_EQ(Defrag("--execute --step-timeout 1 --grace-period 5", &out), 1) << out;
  EXPECT_NE(out.find("stopped: the step for default/p did not deliver within 1 s"),
            std::string::npos)
      << out;
  const auto evictions = api_.Requests("POST", "/api/v1/namespaces/default/pods/w/eviction");
  ASSERT_EQ(evictions.size(), 1U);
  EXPECT_EQ(evictions[0].JsonBody()["deleteOptions"]["gracePeriodSeconds"], 5);
  EXPECT_EQ(out.find("done:"), std::string::npos) << out;
}

// Evictions recorded in the last hour count against --max-evictions-per-hour.
TEST_F(DefragClusterTest, TheLastHoursEvictionsLeaveNoneForThisRun) {
  const Json recent{{"reason", "TesseraDefragEvicted"}, {"lastTimestamp", "2999-01-01T00:00:00Z"}};
  const Json old{{"reason", "TesseraDefragEvicted"}, {"lastTimestamp", "2000-01-01T00:00:00Z"}};
  api_.On("GET", "/api/v1/events", Answer(List(Json::array({recent, recent, old}))));
  std::string out;
  ASSERT_EQ(Defrag("--execute --max-evictions-per-hour 2", &out), 0) << out;
  EXPECT_NE(out.find("the last hour's evictions (2 of --max-evictions-per-hour 2) leave 0"),
            std::string::npos)
      << out;
  EXPECT_EQ(api_.Count("POST", "/api/v1/namespaces/default/pods/w/eviction"), 0U);
  EXPECT_EQ(api_.Requests("GET", "/api/v1/events")[0].Param("fieldSelector"),
            "reason=TesseraDefragEvicted");
}

TEST_F(DefragClusterTest, ExecuteIsForARealClusterOnly) {
  std::string out;
  EXPECT_EQ(tessera::testing::RunTessera("defrag", "--cluster x.yaml --execute", &out), 2);
  EXPECT_NE(out.find("--execute acts on a real cluster"), std::string::npos) << out;
  EXPECT_EQ(Defrag("--execute -o json", &out), 2);
}

}  // namespace
}  // namespace tessera::app
