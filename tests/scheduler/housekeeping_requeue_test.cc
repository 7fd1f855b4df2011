// Housekeeping's requeue pass (ServiceOptions::requeue_after): pods the filter refused are asked
// about again only when kube-scheduler will not ask on its own and they now fit.
#include "scheduler/housekeeping.h"

#include <gtest/gtest.h>

#include "scheduler/service_fixture.h"
#include "support/builders.h"
#include "support/k8s_json.h"

namespace tessera::scheduler {
namespace {

using codec::Json;
using testing::NodeWith;
using testing::PodBuilder;
using testing::PodJson;
using testing::SharingGpu;
using testing_support::QuotaJson;
using testing_support::ServiceTest;

constexpr const char* kRequeuedAt = "tessera.io/requeued-at";

class RequeueTest : public ServiceTest {
 protected:
  RequeueTest() { options.requeue_after = std::chrono::seconds(5); }

  // A bound pod holding `mem` MiB of GPU-0 on n1, as the informer shows it.
  static model::Pod Running(const std::string& key, int64_t mem) {
    model::Pod pod = PodBuilder(key).Container(1, mem).Build();
    pod.node_name = "n1";
    pod.annotations["hami.io/vgpu-node"] = "n1";
    pod.annotations["hami.io/bind-phase"] = "success";
    pod.annotations["hami.io/vgpu-devices-allocated"] =
        "GPU-0,NVIDIA," + std::to_string(mem) + ",0:;";
    return pod;
  }

  // The common start: n1 with one 8000 MiB GPU, `holder` running there with 6000 MiB, and
  // `waiting` (4000 MiB) refused by the filter. The holder's deletion then lets it fit.
  SchedulerService& RefusedBehindTheHolder() {
    auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-0", 8000)})});
    s.view.UpsertPod(PodJson(holder));
    const Json r = Filter(waiting, {"n1"});
    EXPECT_EQ(r["FailedNodes"]["n1"], "1/1 CardInsufficientMemory") << r.dump();
    return s;
  }

  const model::Pod holder = Running("ns/holder", 6000);
  const model::Pod waiting = PodBuilder("ns/waiting").Container(1, 4000).Build();

  // Two passes, `requeue_after` apart: the first sees the change, the second acts.
  size_t PassesAfterTheDelay() {
    size_t n = service->housekeeping.RequeueWaitingPods();
    clock.now += options.requeue_after;
    return n + service->housekeeping.RequeueWaitingPods();
  }

  bool Requeued(const std::string& key) {
    std::lock_guard lock(writer.mu);
    auto it = writer.annotations.find(key);
    return it != writer.annotations.end() && it->second.count(kRequeuedAt) > 0;
  }
  int RequeueEvents() {
    std::lock_guard lock(writer.mu);
    int n = 0;
    for (const auto& e : writer.events) n += e.find("Normal Requeued") != std::string::npos;
    return n;
  }
};

// The race behind a pod pending for minutes: kube-scheduler sees the holder's deletion first and
// asks while this view still holds it; the pod is refused and nothing else happens.
TEST_F(RequeueTest, APodRefusedBeforeADeletionThisViewSawLateIsRequeuedOnce) {
  auto& s = RefusedBehindTheHolder();
  EXPECT_EQ(PassesAfterTheDelay(), 0u) << "nothing changed since the refusal";
  s.view.DeletePod(PodJson(holder));
  EXPECT_EQ(s.housekeeping.RequeueWaitingPods(), 0u)
      << "kube-scheduler gets requeue_after to ask itself";
  clock.now += std::chrono::seconds(4);
  EXPECT_EQ(s.housekeeping.RequeueWaitingPods(), 0u);
  clock.now += std::chrono::seconds(1);
  EXPECT_EQ(s.housekeeping.RequeueWaitingPods(), 1u);
  EXPECT_TRUE(Requeued("ns/waiting"));
  EXPECT_EQ(writer.annotations["ns/waiting"][kRequeuedAt], "1767225600");
  EXPECT_EQ(RequeueEvents(), 1);
  clock.now += std::chrono::seconds(60);
  EXPECT_EQ(s.housekeeping.RequeueWaitingPods(), 0u) << "once per change";
  EXPECT_FALSE(Holds("ns/waiting")) << "the pass reserves nothing: kube-scheduler's filter does";
  EXPECT_EQ(Filter(waiting, {"n1"})["NodeNames"][0], "n1");
}

TEST_F(RequeueTest, APodKubeSchedulerAskedAboutAfterTheChangeIsLeftToIt) {
  auto& s = RefusedBehindTheHolder();
  s.view.DeletePod(PodJson(holder));
  ASSERT_EQ(Filter(waiting, {"n1"})["NodeNames"][0], "n1");
  EXPECT_EQ(PassesAfterTheDelay(), 0u);
  EXPECT_FALSE(Requeued("ns/waiting"));
}

TEST_F(RequeueTest, AChangeThatDoesNotAdmitThePodRequeuesNothing) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-0", 8000)})});
  const model::Pod big = Running("ns/big", 5000);
  const model::Pod small = Running("ns/small", 1000);
  s.view.UpsertPod(PodJson(big));
  s.view.UpsertPod(PodJson(small));
  ASSERT_TRUE(Filter(waiting, {"n1"})["NodeNames"].is_null());
  s.view.DeletePod(PodJson(small));  // 3000 MiB free: still not enough
  EXPECT_EQ(PassesAfterTheDelay(), 0u);
  s.view.DeletePod(PodJson(big));
  EXPECT_EQ(PassesAfterTheDelay(), 1u);
  EXPECT_TRUE(Requeued("ns/waiting"));
}

TEST_F(RequeueTest, OnlyTheNodesOfItsLastFilterCount) {
  auto& s = MakeSynced(
      {NodeWith("n1", {SharingGpu("GPU-0", 8000)}), NodeWith("n2", {SharingGpu("GPU-9", 2000)})});
  s.view.UpsertPod(PodJson(holder));
  ASSERT_TRUE(Filter(waiting, {"n2"})["NodeNames"].is_null());  // kube-scheduler offered n2 only
  s.view.DeletePod(PodJson(holder));                            // room on n1, not on n2
  EXPECT_EQ(PassesAfterTheDelay(), 0u);
}

// kube-scheduler does not watch ResourceQuotas: without the requeue, a raised quota admits the
// pod only at its 5-minute flush.
TEST_F(RequeueTest, ARaisedQuotaRequeuesThePodItHeldBack) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-0", 16000)})});
  s.view.ReplaceQuotas({QuotaJson("team", "gpu", {{"limits.nvidia.com/gpumem", "4000"}})});
  const model::Pod pod = PodBuilder("team/p").Container(1, 8000).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["FailedNodes"]["n1"], "1/1 ResourceQuotaNotFit");
  s.view.UpsertQuota(QuotaJson("team", "gpu", {{"limits.nvidia.com/gpumem", "16000"}}));
  EXPECT_EQ(PassesAfterTheDelay(), 1u);
  EXPECT_TRUE(Requeued("team/p"));
}

// Only this process knows a reservation expired.
TEST_F(RequeueTest, AnExpiredReservationRequeuesThePodItHeldBack) {
  options.reservation_timeout = std::chrono::seconds(30);
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-0", 8000)})});
  const model::Pod first = PodBuilder("ns/first").Container(1, 6000).Build();
  ASSERT_EQ(Filter(first, {"n1"})["NodeNames"][0], "n1");  // never bound
  const model::Pod second = PodBuilder("ns/second").Container(1, 6000).Build();
  // The informer shows it: a pod only filters named would be forgotten with the reservation.
  s.view.UpsertPod(PodJson(second));
  ASSERT_TRUE(Filter(second, {"n1"})["NodeNames"].is_null());
  clock.now += std::chrono::seconds(31);
  ASSERT_EQ(s.housekeeping.ExpireReservations(), 1u);
  EXPECT_EQ(PassesAfterTheDelay(), 1u);
  EXPECT_TRUE(Requeued("ns/second"));
  EXPECT_FALSE(Requeued("ns/first"));
}

TEST_F(RequeueTest, APodBoundOrDeletedMeanwhileIsForgotten) {
  auto& s = RefusedBehindTheHolder();
  s.view.DeletePod(PodJson(waiting));
  s.view.DeletePod(PodJson(holder));
  EXPECT_EQ(PassesAfterTheDelay(), 0u);
  EXPECT_EQ(writer.patches, 0);
}

TEST_F(RequeueTest, AFollowerAndAZeroDelayWriteNothing) {
  {
    auto& s = RefusedBehindTheHolder();
    s.view.SetLeader(false);
    s.view.DeletePod(PodJson(holder));
    EXPECT_EQ(PassesAfterTheDelay(), 0u);
    s.view.SetLeader(true);  // leading again: the change is still there to act on
    EXPECT_EQ(PassesAfterTheDelay(), 1u);
  }
  options.requeue_after = std::chrono::seconds(0);
  auto& s = RefusedBehindTheHolder();
  s.view.DeletePod(PodJson(holder));
  clock.now += std::chrono::hours(1);
  EXPECT_EQ(s.housekeeping.RequeueWaitingPods(), 0u);
}

TEST_F(RequeueTest, AFailedWriteIsLoggedAndCountsNothing) {
  auto& s = RefusedBehindTheHolder();
  s.view.DeletePod(PodJson(holder));
  writer.fail_patch = true;
  EXPECT_EQ(PassesAfterTheDelay(), 0u);
  EXPECT_EQ(RequeueEvents(), 0);
  const std::string metrics = s.view.metrics().Render({});
  EXPECT_NE(metrics.find("tessera_requeued_pods_total 0"), std::string::npos) << metrics;
}

TEST_F(RequeueTest, TheMetricCountsRequeuedPods) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-0", 8000)})});
  s.view.UpsertPod(PodJson(holder));
  ASSERT_TRUE(Filter(PodBuilder("ns/a").Container(1, 1000).Build(), {"n1"})["NodeNames"][0] ==
              "n1");
  ASSERT_TRUE(Filter(PodBuilder("ns/b").Container(1, 3000).Build(), {"n1"})["NodeNames"].is_null());
  ASSERT_TRUE(Filter(PodBuilder("ns/c").Container(1, 3000).Build(), {"n1"})["NodeNames"].is_null());
  s.view.DeletePod(PodJson(holder));
  EXPECT_EQ(PassesAfterTheDelay(), 2u);
  const std::string metrics = s.view.metrics().Render({});
  EXPECT_NE(metrics.find("tessera_requeued_pods_total 2"), std::string::npos) << metrics;
}

}  // namespace
}  // namespace tessera::scheduler
