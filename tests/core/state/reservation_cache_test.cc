#include "core/state/reservation_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/builders.h"

namespace tessera::state {
namespace {

using ::testing::HasSubstr;
using testing::NodeWith;
using testing::PodBuilder;
using testing::SharingGpu;
using Adoption = ReservationCache::Adoption;
using std::chrono::seconds;

constexpr std::chrono::milliseconds kTimeout{seconds(60)};
const ReservationCache::TimePoint kT0 = ReservationCache::TimePoint{} + std::chrono::hours(1);

class ReservationCacheTest : public ::testing::Test {
 protected:
  ReservationCacheTest() {
    state_.UpsertNode(NodeWith("n1", {SharingGpu("GPU-0", 32768, 0, 0)}));
    state_.UpsertNode(NodeWith("n2", {SharingGpu("GPU-1", 32768, 0, 0)}));
  }

  // What the scheduler's reserve phase leaves in the state for `key`.
  void Reserve(const std::string& key, const std::string& node, const std::string& uuid, int mem) {
    state_.AddPod(PodReservation{
        key, "uid-" + key.substr(key.find('/') + 1), node, 0, {{{uuid, "NVIDIA", mem, 10}}}, {}});
  }
  int UsedMem(const std::string& node) const { return state_.node(node)->usage[0].used_mem; }

  // A pod as an informer shows it, with HAMi's placement annotations.
  static model::Pod Placed(const std::string& key, const std::string& node, const std::string& uuid,
                           int mem) {
    return PodBuilder(key).Container(1, mem).PlacedOn(node, uuid, mem).Build();
  }
  static model::Pod Bound(model::Pod pod, const std::string& node) {
    pod.node_name = node;
    pod.phase = "Running";
    return pod;
  }

  ClusterState state_{config::SchedulerConfig{}};
  ReservationCache cache_{state_, kTimeout};
};

TEST_F(ReservationCacheTest, AnAssumedReservationExpiresAtItsDeadlineAndNotBefore) {
  Reserve("ns/p", "n1", "GPU-0", 1000);
  const model::Pod pod = PodBuilder("ns/p").Container(1, 1000).Build();
  cache_.Assume(pod, "n1", kT0);
  EXPECT_EQ(cache_.awaiting_bind(), 1U);
  EXPECT_TRUE(cache_.Expire(kT0 + seconds(59)).empty());
  EXPECT_EQ(UsedMem("n1"), 1000);
  EXPECT_DOUBLE_EQ(cache_.OldestWait(kT0 + seconds(30)).count(), 30.0);
  auto expired = cache_.Expire(kT0 + seconds(60));
  ASSERT_EQ(expired.size(), 1U);
  EXPECT_EQ(expired[0].key, "ns/p");
  EXPECT_EQ(expired[0].uid, "uid-p");
  EXPECT_EQ(expired[0].node, "n1");
  EXPECT_EQ(state_.pod("ns/p"), nullptr);
  EXPECT_EQ(UsedMem("n1"), 0);
  EXPECT_EQ(cache_.awaiting_bind(), 0U);
  EXPECT_DOUBLE_EQ(cache_.OldestWait(kT0 + seconds(90)).count(), 0.0);
}

TEST_F(ReservationCacheTest, ABindInFlightIsNotExpiredAndItsSuccessConfirmsIt) {
  Reserve("ns/p", "n1", "GPU-0", 1000);
  const uint64_t serial =
      cache_.Assume(PodBuilder("ns/p").Build(), "n1", kT0, {{"hami.io/x", std::string("1")}});
  auto ticket = cache_.BeginBind("ns/p", "n1");
  ASSERT_TRUE(ticket.ok()) << ticket.error().message;
  EXPECT_TRUE(ticket->reserved);
  EXPECT_EQ(ticket->serial, serial);
  EXPECT_EQ(ticket->to_write.at("hami.io/x"), "1");
  EXPECT_TRUE(cache_.Expire(kT0 + seconds(600)).empty()) << "the bind is in flight";
  cache_.BindDone("ns/p", serial);
  EXPECT_EQ(cache_.awaiting_bind(), 0U);
  EXPECT_TRUE(cache_.Expire(kT0 + seconds(6000)).empty());
  EXPECT_EQ(UsedMem("n1"), 1000) << "bound: the devices stay the pod's";
}

TEST_F(ReservationCacheTest, BindsWithoutAReservationFailWithCodes) {
  Reserve("ns/p", "n1", "GPU-0", 1000);
  cache_.Assume(PodBuilder("ns/p").Build(), "n1", kT0);
  auto elsewhere = cache_.BeginBind("ns/p", "n2");
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_EQ(elsewhere.error().code, ErrorCode::kConflict);
  EXPECT_THAT(elsewhere.error().message, HasSubstr("holds devices on node n1, not on n2"));
  auto unknown = cache_.BeginBind("ns/never", "n1");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(unknown.error().message, HasSubstr("pod ns/never holds no reservation"));
  // A pass-through pod binds once without devices.
  cache_.AssumePassthrough("ns/cpu");
  auto through = cache_.BeginBind("ns/cpu", "n2");
  ASSERT_TRUE(through.ok());
  EXPECT_FALSE(through->reserved);
  EXPECT_EQ(through->serial, 0U);
  EXPECT_FALSE(cache_.BeginBind("ns/cpu", "n2").ok());
}

TEST_F(ReservationCacheTest, UndoReleasesOnlyTheReservationItNames) {
  Reserve("ns/p", "n1", "GPU-0", 1000);
  const uint64_t first = cache_.Assume(PodBuilder("ns/p").Build(), "n1", kT0);
  const uint64_t second = cache_.Assume(PodBuilder("ns/p").Build(), "n1", kT0 + seconds(1));
  EXPECT_NE(first, second);
  EXPECT_FALSE(cache_.Undo("ns/p", first)) << "a newer filter replaced it";
  EXPECT_EQ(UsedMem("n1"), 1000);
  EXPECT_TRUE(cache_.Undo("ns/p", second));
  EXPECT_EQ(UsedMem("n1"), 0);
  EXPECT_EQ(cache_.awaiting_bind(), 0U);
}

TEST_F(ReservationCacheTest, ForgetFreesDevicesAndDropsTheWait) {
  Reserve("ns/p", "n1", "GPU-0", 1000);
  cache_.Assume(PodBuilder("ns/p").Build(), "n1", kT0);
  auto gone = cache_.Forget("ns/p");
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->node, "n1");
  EXPECT_EQ(UsedMem("n1"), 0);
  EXPECT_EQ(cache_.awaiting_bind(), 0U);
  EXPECT_FALSE(cache_.Forget("ns/p").has_value());
}

TEST_F(ReservationCacheTest, ABoundPodWithAPlacementIsAdoptedOnceAndWaitsForNothing) {
  const model::Pod running = Bound(Placed("ns/r", "n1", "GPU-0", 2000), "n1");
  auto seen = cache_.Observe(running, kT0);
  EXPECT_EQ(seen.adoption, Adoption::kBound);
  EXPECT_EQ(seen.placed_node, "n1");
  EXPECT_EQ(UsedMem("n1"), 2000);
  EXPECT_EQ(cache_.awaiting_bind(), 0U);
  // The same event again changes nothing (it is not added twice).
  EXPECT_EQ(cache_.Observe(running, kT0).adoption, Adoption::kBound);
  EXPECT_EQ(UsedMem("n1"), 2000);
  EXPECT_EQ(state_.node("n1")->usage[0].used, 1);
}

TEST_F(ReservationCacheTest, AnUnboundPodWithAPlacementWaitsForItsBindAndExpires) {
  auto seen = cache_.Observe(Placed("ns/u", "n2", "GPU-1", 3000), kT0);
  EXPECT_EQ(seen.adoption, Adoption::kUnbound);
  EXPECT_TRUE(cache_.IsAwaitingBind("ns/u"));
  EXPECT_EQ(UsedMem("n2"), 3000);
  auto expired = cache_.Expire(kT0 + kTimeout);
  ASSERT_EQ(expired.size(), 1U);
  EXPECT_EQ(expired[0].node, "n2") << "the node the placement's annotation names";
  EXPECT_EQ(UsedMem("n2"), 0);
}

TEST_F(ReservationCacheTest, OurOwnReservationWinsOverAnOlderUnboundEventAndTheBindConfirmsIt) {
  Reserve("ns/p", "n1", "GPU-0", 1000);
  cache_.Assume(PodBuilder("ns/p").Build(), "n1", kT0);
  // An event from before the filter, with a stale placement on n2.
  EXPECT_EQ(cache_.Observe(Placed("ns/p", "n2", "GPU-1", 5000), kT0).adoption, Adoption::kKeptOurs);
  EXPECT_EQ(UsedMem("n1"), 1000);
  EXPECT_EQ(UsedMem("n2"), 0);
  // The pod bound with our placement: confirmed, nothing waits any more.
  EXPECT_EQ(cache_.Observe(Bound(Placed("ns/p", "n1", "GPU-0", 1000), "n1"), kT0).adoption,
            Adoption::kBound);
  EXPECT_EQ(cache_.awaiting_bind(), 0U);
  EXPECT_TRUE(cache_.Expire(kT0 + seconds(3600)).empty());
  EXPECT_EQ(UsedMem("n1"), 1000);
}

TEST_F(ReservationCacheTest, FinishedPodsAndNewPodsOfTheSameNameFreeTheOldDevices) {
  cache_.Observe(Bound(Placed("ns/r", "n1", "GPU-0", 2000), "n1"), kT0);
  model::Pod replica = Bound(Placed("ns/r", "n1", "GPU-0", 500), "n1");
  replica.uid = "uid-r-2";
  auto seen = cache_.Observe(replica, kT0);
  ASSERT_TRUE(seen.forgotten.has_value());
  EXPECT_EQ(seen.forgotten->uid, "uid-r");
  EXPECT_EQ(seen.adoption, Adoption::kBound);
  EXPECT_EQ(UsedMem("n1"), 500);
  replica.phase = "Succeeded";
  seen = cache_.Observe(replica, kT0);
  EXPECT_EQ(seen.adoption, Adoption::kGone);
  ASSERT_TRUE(seen.forgotten.has_value());
  EXPECT_EQ(seen.forgotten->uid, "uid-r-2");
  EXPECT_EQ(UsedMem("n1"), 0);
}

TEST_F(ReservationCacheTest, ABoundPodWithoutAPlacementGivesItsDevicesBack) {
  cache_.Observe(Bound(Placed("ns/r", "n1", "GPU-0", 2000), "n1"), kT0);
  model::Pod bare = Bound(PodBuilder("ns/r").Container(1, 2000).Build(), "n1");
  auto seen = cache_.Observe(bare, kT0);
  EXPECT_EQ(seen.adoption, Adoption::kNoPlacement);
  EXPECT_TRUE(seen.forgotten.has_value());
  EXPECT_EQ(UsedMem("n1"), 0);
  // Unbound, it keeps what it holds: it may still be filtered.
  Reserve("ns/q", "n2", "GPU-1", 700);
  EXPECT_EQ(cache_.Observe(PodBuilder("ns/q").Build(), kT0).adoption, Adoption::kNoPlacement);
  EXPECT_EQ(UsedMem("n2"), 700);
}

TEST_F(ReservationCacheTest, AnUnreadablePlacementHoldsTheGpusItNamesAndSaysWhy) {
  model::Pod pod = PodBuilder("ns/bad")
                       .Container(1, 1000)
                       .Annotation("hami.io/vgpu-node", "n1")
                       .Annotation("hami.io/vgpu-devices-allocated", "GPU-0,NVIDIA,lots,10:;")
                       .Build();
  auto seen = cache_.Observe(Bound(pod, "n1"), kT0);
  EXPECT_EQ(seen.adoption, Adoption::kBound);
  EXPECT_THAT(seen.problem, HasSubstr("pod ns/bad: annotation hami.io/vgpu-devices-allocated"));
  EXPECT_EQ(seen.held_gpus, std::vector<std::string>{"GPU-0"});
  ASSERT_NE(state_.pod("ns/bad"), nullptr);
  EXPECT_EQ(state_.pod("ns/bad")->held_gpus, std::vector<std::string>{"GPU-0"});
}

}  // namespace
}  // namespace tessera::state
