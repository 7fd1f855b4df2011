// NodeLocks: which nodes HAMi's node lock holds, or a filter's placement is about to, and for
// which pod; how a lock ends (the feed, a released placement, its age).
#include "scheduler/node_locks.h"

#include <gtest/gtest.h>

#include <chrono>

namespace tessera::scheduler {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using Clock = NodeLocks::Clock;

const Clock::time_point kT0{};

TEST(NodeLocksTest, APlacementHoldsTheNodeForOtherPodsOnly) {
  NodeLocks locks(minutes(5), seconds(60));
  locks.Placed("n1", "ns/a", kT0);
  EXPECT_TRUE(locks.HeldForOther("n1", "ns/b", kT0));
  EXPECT_FALSE(locks.HeldForOther("n1", "ns/a", kT0)) << "its own bind may go ahead";
  EXPECT_FALSE(locks.HeldForOther("n2", "ns/b", kT0));
}

TEST(NodeLocksTest, TheFeedShowingTheLockReleasedEndsItButNotAPlacementStillToBind) {
  NodeLocks locks(minutes(5), seconds(60));
  locks.Placed("n1", "ns/a", kT0);
  locks.Observe("n1", false, "", kT0 + seconds(1));  // an update from before a's bind
  EXPECT_TRUE(locks.HeldForOther("n1", "ns/b", kT0 + seconds(1)));
  locks.Observe("n1", true, "ns/a", kT0 + seconds(2));  // a's bind took the lock
  locks.Observe("n1", false, "", kT0 + seconds(3));     // the device plugin released it
  EXPECT_FALSE(locks.HeldForOther("n1", "ns/b", kT0 + seconds(3)));
  EXPECT_EQ(locks.size(), 0u);
}

TEST(NodeLocksTest, AReleasedPlacementFreesTheNodeButNotALockTheFeedShows) {
  NodeLocks locks(minutes(5), seconds(60));
  locks.Placed("n1", "ns/a", kT0);
  locks.Released("ns/a");
  EXPECT_FALSE(locks.HeldForOther("n1", "ns/b", kT0));
  locks.Observe("n2", true, "ns/c", kT0);
  locks.Released("ns/c");
  EXPECT_TRUE(locks.HeldForOther("n2", "ns/b", kT0)) << "only the feed ends a real lock";
}

TEST(NodeLocksTest, AnotherPodsLockOnTheNodeIsNotOverwrittenByAPlacement) {
  NodeLocks locks(minutes(5), seconds(60));
  locks.Observe("n1", true, "ns/c", kT0);
  locks.Placed("n1", "ns/a", kT0 + seconds(1));  // only if nothing else fitted
  locks.Released("ns/a");
  EXPECT_TRUE(locks.HeldForOther("n1", "ns/a", kT0 + seconds(1)));
}

TEST(NodeLocksTest, LegacyLocksHoldTheNodeForEveryPod) {
  NodeLocks locks(minutes(5), seconds(60));
  locks.Observe("n1", true, "", kT0);
  EXPECT_TRUE(locks.HeldForOther("n1", "ns/a", kT0));
}

TEST(NodeLocksTest, LocksStopCountingWhenStale) {
  NodeLocks locks(minutes(5), seconds(60));
  locks.Placed("n1", "ns/a", kT0);
  locks.Observe("n2", true, "ns/c", kT0);
  EXPECT_TRUE(locks.HeldForOther("n1", "ns/b", kT0 + seconds(60)));
  EXPECT_FALSE(locks.HeldForOther("n1", "ns/b", kT0 + seconds(61)))
      << "a placement no bind confirmed within the reservation's timeout";
  EXPECT_TRUE(locks.HeldForOther("n2", "ns/b", kT0 + minutes(5)));
  EXPECT_FALSE(locks.HeldForOther("n2", "ns/b", kT0 + minutes(5) + seconds(1)))
      << "a lock held past --node-lock-timeout";
  // The same holder seen again keeps its first sighting.
  locks.Observe("n2", true, "ns/c", kT0 + minutes(6));
  EXPECT_FALSE(locks.HeldForOther("n2", "ns/b", kT0 + minutes(6)));
}

TEST(NodeLocksTest, ForgettingANodeDropsItsEntry) {
  NodeLocks locks;
  locks.Observe("n1", true, "ns/c", kT0);
  locks.Forget("n1");
  EXPECT_EQ(locks.size(), 0u);
}

// A pod filtered again holds only the node of its latest filter; releasing it frees that node
// and leaves another pod's placement, made after the first one's node was forgotten, alone.
TEST(NodeLocksTest, APodHoldsOnlyItsLatestPlacement) {
  NodeLocks locks(minutes(5), seconds(60));
  locks.Placed("n1", "ns/a", kT0);
  locks.Placed("n2", "ns/a", kT0 + seconds(1));
  EXPECT_FALSE(locks.HeldForOther("n1", "ns/b", kT0 + seconds(1)));
  EXPECT_TRUE(locks.HeldForOther("n2", "ns/b", kT0 + seconds(1)));
  EXPECT_EQ(locks.size(), 1u);
  locks.Forget("n2");
  locks.Placed("n2", "ns/b", kT0 + seconds(2));
  locks.Released("ns/a");  // a's placement went with the node: b's stays
  EXPECT_TRUE(locks.HeldForOther("n2", "ns/a", kT0 + seconds(2)));
  locks.Released("ns/b");
  EXPECT_EQ(locks.size(), 0u);
}

}  // namespace
}  // namespace tessera::scheduler
