#include "scheduler_runtime/kube_cluster.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <thread>

#include "adapters/kube/fake_api_server.h"
#include "scheduler/scheduler_service.h"
#include "support/builders.h"
#include "support/k8s_json.h"

namespace tessera::scheduler_runtime {
namespace {

using codec::Json;
using kube::testing::FakeApiServer;
using kube::testing::RecordedRequest;
using kube::testing::ReplyJson;
using kube::testing::StatusBody;

constexpr const char* kNodePath = "/api/v1/nodes/n1";

std::unique_ptr<KubeCluster> ClusterFor(const FakeApiServer& api, KubeClusterOptions o = {}) {
  return KubeCluster::WithConfig(o, kube::testing::ConfigFor(api),
                                 kube::testing::FastRetryOptions());
}

Json NodeWithLock(const std::string& lock, const std::string& rv = "7") {
  Json node = {{"metadata", {{"name", "n1"}, {"resourceVersion", rv}}}};
  if (!lock.empty()) node["metadata"]["annotations"] = {{"hami.io/mutex.lock", lock}};
  return node;
}

std::string Rfc3339(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

template <class Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(KubeCluster, PlacementPatchCarriesTheUidAndDeletesWithNull) {
  FakeApiServer api;
  api.On("PATCH", "/api/v1/namespaces/ns/pods/p", [](const RecordedRequest&, httplib::Response& r) {
    ReplyJson(r, 200, {{"metadata", {{"name", "p"}}}});
  });
  auto cluster = ClusterFor(api);
  Status s = cluster->PatchPodAnnotations({"ns", "p", "uid-1"},
                                          {{"hami.io/vgpu-node", "n1"}, {"gone", std::nullopt}});
  ASSERT_TRUE(s.ok()) << s.message();
  auto reqs = api.Requests("PATCH", "/api/v1/namespaces/ns/pods/p");
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].Header("content-type"), "application/merge-patch+json");
  Json body = reqs[0].JsonBody();
  EXPECT_EQ(body["metadata"]["uid"], "uid-1");
  EXPECT_EQ(body["metadata"]["annotations"]["hami.io/vgpu-node"], "n1");
  EXPECT_TRUE(body["metadata"]["annotations"]["gone"].is_null());
}

TEST(KubeCluster, ConflictOnPatchIsReportedNotSwallowed) {
  FakeApiServer api;
  api.On("PATCH", "/api/v1/namespaces/ns/pods/p", [](const RecordedRequest&, httplib::Response& r) {
    ReplyJson(r, 409, StatusBody(409, "Conflict", "Precondition failed: UID in precondition"));
  });
  auto cluster = ClusterFor(api);
  Status s = cluster->PatchPodAnnotations({"ns", "p", "stale-uid"}, {{"k", "v"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("409"), std::string::npos) << s.message();
}

TEST(KubeCluster, HamiNodeLockIsTakenWithAGuardedPatch) {
  FakeApiServer api;
  api.On("GET", kNodePath,
         [](const RecordedRequest&, httplib::Response& r) { ReplyJson(r, 200, NodeWithLock("")); });
  api.On("PATCH", kNodePath, [](const RecordedRequest&, httplib::Response& r) {
    ReplyJson(r, 200, NodeWithLock("x"));
  });
  auto cluster = ClusterFor(api);
  ASSERT_TRUE(cluster->LockNode("n1", {"ns", "p", "u"}).ok());
  auto reqs = api.Requests("PATCH", kNodePath);
  ASSERT_EQ(reqs.size(), 1u);
  Json body = reqs[0].JsonBody();
  EXPECT_EQ(body["metadata"]["resourceVersion"], "7");
  const std::string lock = body["metadata"]["annotations"]["hami.io/mutex.lock"];
  EXPECT_EQ(lock.substr(lock.size() - 5), ",ns,p") << lock;
}

TEST(KubeCluster, FreshLockOfALivePodIsContention) {
  FakeApiServer api;
  const std::string lock = Rfc3339(std::time(nullptr)) + ",other,q";
  api.On("GET", kNodePath, [&](const RecordedRequest&, httplib::Response& r) {
    ReplyJson(r, 200, NodeWithLock(lock));
  });
  api.On("GET", "/api/v1/namespaces/other/pods/q",
         [](const RecordedRequest&, httplib::Response& r) {
           ReplyJson(r, 200, {{"metadata", {{"name", "q"}}}});
         });
  auto cluster = ClusterFor(api);
  Status s = cluster->LockNode("n1", {"ns", "p", "u"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("node lock contention"), std::string::npos) << s.message();
  EXPECT_EQ(api.Count("PATCH", kNodePath), 0u);
}

TEST(KubeCluster, StaleOrDanglingLocksAreTakenOver) {
  for (const bool stale : {true, false}) {
    FakeApiServer api;
    const std::time_t when = stale ? std::time(nullptr) - 3600 : std::time(nullptr);
    const std::string lock = Rfc3339(when) + ",other,q";
    api.On("GET", kNodePath, [&](const RecordedRequest&, httplib::Response& r) {
      ReplyJson(r, 200, NodeWithLock(lock));
    });
    // A fresh lock whose owner pod is gone is dangling.
    api.On("GET", "/api/v1/namespaces/other/pods/q",
           [](const RecordedRequest&, httplib::Response& r) {
             ReplyJson(r, 404, StatusBody(404, "NotFound", "pods \"q\" not found"));
           });
    api.On("PATCH", kNodePath, [](const RecordedRequest&, httplib::Response& r) {
      ReplyJson(r, 200, NodeWithLock("x"));
    });
    auto cluster = ClusterFor(api);
    Status s = cluster->LockNode("n1", {"ns", "p", "u"});
    EXPECT_TRUE(s.ok()) << (stale ? "stale: " : "dangling: ") << s.message();
    EXPECT_EQ(api.Count("PATCH", kNodePath), 1u);
  }
}

TEST(KubeCluster, UnlockReleasesOnlyItsOwnLock) {
  FakeApiServer api;
  std::string lock = Rfc3339(std::time(nullptr)) + ",other,q";
  api.On("GET", kNodePath, [&](const RecordedRequest&, httplib::Response& r) {
    ReplyJson(r, 200, NodeWithLock(lock));
  });
  api.On("PATCH", kNodePath,
         [](const RecordedRequest&, httplib::Response& r) { ReplyJson(r, 200, NodeWithLock("")); });
  auto cluster = ClusterFor(api);
  ASSERT_TRUE(cluster->UnlockNode("n1", {"ns", "p", "u"}).ok());
  EXPECT_EQ(api.Count("PATCH", kNodePath), 0u) << "someone else's lock is left alone";
  lock = Rfc3339(std::time(nullptr)) + ",ns,p";
  ASSERT_TRUE(cluster->UnlockNode("n1", {"ns", "p", "u"}).ok());
  auto reqs = api.Requests("PATCH", kNodePath);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_TRUE(reqs[0].JsonBody()["metadata"]["annotations"]["hami.io/mutex.lock"].is_null());
}

// Informers feed the service; once both have listed it serves, and a filter's placement reaches
// the API server as a merge patch.
TEST(KubeCluster, InformersSyncTheServiceWhichThenWritesPlacements) {
  FakeApiServer api;
  const Json node = testing::NodeJson(testing::NodeWith("n1", {testing::SharingGpu("GPU-1")}));
  auto list_or_watch = [&api](Json list) {
    return [&api, list](const RecordedRequest& req, httplib::Response& r) {
      if (req.HasParam("watch")) {
        api.Stream(r, {}, /*hang=*/true);
      } else {
        ReplyJson(r, 200, list);
      }
    };
  };
  api.On("GET", "/api/v1/nodes",
         list_or_watch({{"kind", "NodeList"},
                        {"metadata", {{"resourceVersion", "10"}}},
                        {"items", Json::array({node})}}));
  api.On("GET", "/api/v1/pods",
         list_or_watch({{"kind", "PodList"},
                        {"metadata", {{"resourceVersion", "10"}}},
                        {"items", Json::array()}}));
  const Json quota = {{"metadata", {{"name", "gpu"}, {"namespace", "limited"}}},
                      {"spec", {{"hard", {{"limits.nvidia.com/gpumem", "500"}}}}}};
  api.On("GET", "/api/v1/resourcequotas",
         list_or_watch({{"kind", "ResourceQuotaList"},
                        {"metadata", {{"resourceVersion", "10"}}},
                        {"items", Json::array({quota})}}));
  const Json budget = {{"metadata", {{"name", "db"}, {"namespace", "limited"}}},
                       {"spec", {{"selector", {{"matchLabels", {{"app", "db"}}}}}}},
                       {"status", {{"disruptionsAllowed", 1}}}};
  api.On("GET", "/apis/policy/v1/poddisruptionbudgets",
         list_or_watch({{"kind", "PodDisruptionBudgetList"},
                        {"metadata", {{"resourceVersion", "10"}}},
                        {"items", Json::array({budget})}}));
  api.On("PATCH", "/api/v1/namespaces/ns/p", [](const RecordedRequest&, httplib::Response&) {});
  api.On("PATCH", "/api/v1/namespaces/ns/pods/p", [](const RecordedRequest&, httplib::Response& r) {
    ReplyJson(r, 200, {{"metadata", {{"name", "p"}}}});
  });
  api.On("POST", "/api/v1/namespaces/ns/events",
         [](const RecordedRequest&, httplib::Response& r) { ReplyJson(r, 201, Json::object()); });
  auto cluster = ClusterFor(api);
  scheduler::ServiceOptions so;
  so.ready_wait = std::chrono::milliseconds(10);
  so.write_placement_in_bind = false;  // --write-placement=filter: the filter's own PATCH
  scheduler::SchedulerService svc(config::SchedulerConfig{}, so, *cluster);
  std::string why;
  EXPECT_FALSE(svc.view.Ready(&why));
  cluster->Start(svc.view);
  ASSERT_TRUE(Eventually([&] { return svc.view.Ready(&why); })) << why;
  auto pods = api.Requests("GET", "/api/v1/pods");
  ASSERT_FALSE(pods.empty());
  EXPECT_EQ(pods[0].Param("fieldSelector"), "status.phase!=Succeeded,status.phase!=Failed");
  auto pod = testing::PodBuilder("ns/p").Container(1, 1000).Build();
  Json r = Json::parse(
      svc.verbs.Filter(Json{{"Pod", testing::PodJson(pod)}, {"NodeNames", {"n1"}}}.dump()));
  EXPECT_EQ(r["NodeNames"], Json::parse(R"(["n1"])")) << r.dump();
  auto patches = api.Requests("PATCH", "/api/v1/namespaces/ns/pods/p");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].JsonBody()["metadata"]["annotations"]["hami.io/vgpu-node"], "n1");
  // The ResourceQuota informer fed the namespace's GPU quota.
  auto limited = testing::PodBuilder("limited/q").Container(1, 1000).Build();
  Json q = Json::parse(
      svc.verbs.Filter(Json{{"Pod", testing::PodJson(limited)}, {"NodeNames", {"n1"}}}.dump()));
  EXPECT_EQ(q["FailedNodes"]["n1"], "1/1 ResourceQuotaNotFit") << q.dump();
  // The PodDisruptionBudget informer fed preempt's budgets.
  ASSERT_TRUE(Eventually([&] { return svc.view.CopyForPreemption({}).budgets.size() == 1; }));
  EXPECT_EQ(svc.view.CopyForPreemption({}).budgets[0].Key(), "limited/db");
  EXPECT_EQ(svc.view.CopyForPreemption({}).budgets[0].disruptions_allowed, 1);
  cluster->Stop();
}

// Follow mode: serve while the kube-scheduler of our pod (identity prefix) holds its Lease.
TEST(KubeCluster, FollowModeServesOnlyWhileOurKubeSchedulerLeads) {
  FakeApiServer api;
  std::mutex mu;
  std::string holder = "other-pod_1234";
  int renew = 0;
  auto empty = [&api](const RecordedRequest& req, httplib::Response& r) {
    if (req.HasParam("watch")) {
      api.Stream(r, {}, true);
    } else {
      ReplyJson(r, 200, {{"metadata", {{"resourceVersion", "1"}}}, {"items", Json::array()}});
    }
  };
  api.On("GET", "/api/v1/nodes", empty);
  api.On("GET", "/api/v1/pods", empty);
  api.On("GET", "/api/v1/resourcequotas", empty);
  api.On(
      "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/sched",
      [&](const RecordedRequest&, httplib::Response& r) {
        std::lock_guard lock(mu);
        ReplyJson(
            r, 200,
            {{"spec",
              {{"holderIdentity", holder},
               {"leaseDurationSeconds", 15},
               {"renewTime", "2026-11-30T06:00:0" + std::to_string(++renew % 10) + ".000000Z"}}}});
      });
  KubeClusterOptions o;
  o.leader_election = LeaderElectionMode::kFollow;
  o.lease_name = "sched";
  o.identity = "my-pod_";
  auto cluster = ClusterFor(api, o);
  scheduler::ServiceOptions so;
  scheduler::SchedulerService svc(config::SchedulerConfig{}, so, *cluster);
  cluster->Start(svc.view);
  std::string why;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(svc.view.Ready(&why));
  {
    std::lock_guard lock(mu);
    holder = "my-pod_5678";
  }
  EXPECT_TRUE(Eventually([&] { return svc.view.Ready(&why); })) << why;
  cluster->Stop();
}

}  // namespace
}  // namespace tessera::scheduler_runtime
