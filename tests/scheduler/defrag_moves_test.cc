#include "scheduler/defrag_moves.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Clock = DefragMoves::Clock;

TEST(DefragMovesTest, AMoveIsWantedOnceAndOnlyForItsController) {
  DefragMoves moves;
  const Clock::time_point t0{};
  moves.Leaving("pod-1", "rs-a", "n2", t0);
  moves.Leaving("pod-1", "rs-a", "n9", t0);  // seen again (terminating, then deleted): once
  moves.Leaving("pod-2", "rs-a", "n3", t0 + std::chrono::seconds(1));
  EXPECT_THAT(moves.NodesFor("rs-a", t0), ElementsAre("n2", "n3"));
  EXPECT_THAT(moves.NodesFor("rs-b", t0), IsEmpty());
  moves.Used("rs-a", "n2");
  EXPECT_THAT(moves.NodesFor("rs-a", t0), ElementsAre("n3"));
  moves.Used("rs-a", "n2");  // nothing left on n2: no other move is used
  EXPECT_THAT(moves.NodesFor("rs-a", t0), ElementsAre("n3"));
  // A used move is kept until it expires, so the evicted pod's deletion cannot add it again.
  moves.Leaving("pod-1", "rs-a", "n2", t0);
  EXPECT_THAT(moves.NodesFor("rs-a", t0), ElementsAre("n3"));
}

TEST(DefragMovesTest, MovesExpireAndAreCapped) {
  DefragMoves moves(2, std::chrono::minutes(10));
  const Clock::time_point t0{};
  moves.Leaving("pod-1", "rs", "n1", t0);
  moves.Leaving("pod-2", "rs", "n2", t0 + std::chrono::seconds(1));
  moves.Leaving("pod-3", "rs", "n3", t0 + std::chrono::seconds(2));  // the oldest goes
  EXPECT_EQ(moves.size(), 2U);
  EXPECT_THAT(moves.NodesFor("rs", t0 + std::chrono::seconds(3)), ElementsAre("n2", "n3"));
  EXPECT_THAT(moves.NodesFor("rs", t0 + std::chrono::minutes(10) + std::chrono::seconds(1)),
              ElementsAre("n3"));
  EXPECT_THAT(moves.NodesFor("rs", t0 + std::chrono::minutes(11)), IsEmpty());
  EXPECT_EQ(moves.size(), 0U);
}

TEST(DefragMovesTest, IncompleteMovesAreIgnored) {
  DefragMoves moves;
  moves.Leaving("", "rs", "n1", {});
  moves.Leaving("pod", "", "n1", {});
  moves.Leaving("pod", "rs", "", {});
  EXPECT_EQ(moves.size(), 0U);
  // What a pod wrote is kept only when it can name a node: 1024 moves hold at most 253 bytes each.
  moves.Leaving("pod", "rs", std::string(DefragMoves::kMaxNodeName + 1, 'n'), {});
  moves.Leaving("pod", std::string(300, 'u'), "n1", {});
  EXPECT_EQ(moves.size(), 0U);
  moves.Leaving("pod", "rs", std::string(DefragMoves::kMaxNodeName, 'n'), {});
  EXPECT_EQ(moves.size(), 1U);
}

}  // namespace
}  // namespace tessera::scheduler
