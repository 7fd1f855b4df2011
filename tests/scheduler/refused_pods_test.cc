#include "scheduler/refused_pods.h"

#include <gtest/gtest.h>

#include <map>

namespace tessera::scheduler {
namespace {

using std::chrono::seconds;
using Names = RefusedPods::Names;

std::vector<std::string> Keys(const std::vector<RefusedPods::Due>& due) {
  std::vector<std::string> keys;
  for (const auto& d : due) keys.push_back(d.key);
  return keys;
}

TEST(RefusedPodsTest, APodRefusedAtTheCurrentViewIsNeverDue) {
  RefusedPods book;
  const Names nodes = {"n1"};
  book.Refused("ns/a", &nodes);
  const RefusedPods::Clock::time_point t0{};
  EXPECT_TRUE(book.TakeDue(t0, seconds(0), 10).empty());
  EXPECT_TRUE(book.TakeDue(t0 + seconds(3600), seconds(5), 10).empty());
}

TEST(RefusedPodsTest, AChangeMakesItDueAfterTheDelayOnceUntilTheNextChange) {
  RefusedPods book;
  const Names nodes = {"n1", "n2"};
  book.Refused("ns/a", &nodes);
  book.ViewChanged();
  const RefusedPods::Clock::time_point t0{};
  EXPECT_TRUE(book.TakeDue(t0, seconds(5), 10).empty()) << "the delay starts when first seen";
  EXPECT_TRUE(book.TakeDue(t0 + seconds(4), seconds(5), 10).empty());
  auto due = book.TakeDue(t0 + seconds(5), seconds(5), 10);
  ASSERT_EQ(Keys(due), std::vector<std::string>{"ns/a"});
  ASSERT_NE(due[0].candidates, nullptr);
  EXPECT_EQ(*due[0].candidates, nodes);
  EXPECT_TRUE(book.TakeDue(t0 + seconds(60), seconds(5), 10).empty()) << "once per view version";
  book.ViewChanged();
  EXPECT_TRUE(book.TakeDue(t0 + seconds(61), seconds(5), 10).empty()) << "a new delay";
  EXPECT_EQ(Keys(book.TakeDue(t0 + seconds(66), seconds(5), 10)), std::vector<std::string>{"ns/a"});
}

TEST(RefusedPodsTest, ARefusalAfterTheChangeResetsIt) {
  RefusedPods book;
  book.Refused("ns/a", nullptr);
  book.ViewChanged();
  const RefusedPods::Clock::time_point t0{};
  (void)book.TakeDue(t0, seconds(5), 10);
  book.Refused("ns/a", nullptr);  // kube-scheduler asked again, after the change
  EXPECT_TRUE(book.TakeDue(t0 + seconds(10), seconds(5), 10).empty());
}

TEST(RefusedPodsTest, ForgottenAndDroppedPodsAreNeverDue) {
  RefusedPods book;
  book.Refused("ns/a", nullptr);
  book.Refused("ns/b", nullptr);
  book.Refused("ns/c", nullptr);
  book.Forget("ns/a");
  book.KeepOnly(std::map<std::string, int>{{"ns/c", 0}});
  EXPECT_EQ(book.size(), 1u);
  book.ViewChanged();
  const RefusedPods::Clock::time_point t0{};
  auto due = book.TakeDue(t0, seconds(0), 10);
  EXPECT_EQ(Keys(due), std::vector<std::string>{"ns/c"});
  EXPECT_EQ(due[0].candidates, nullptr) << "refused among every node";
}

TEST(RefusedPodsTest, TheLimitLeavesTheRestForTheNextCall) {
  RefusedPods book;
  for (const char* k : {"ns/a", "ns/b", "ns/c"}) book.Refused(k, nullptr);
  book.ViewChanged();
  const RefusedPods::Clock::time_point t0{};
  EXPECT_EQ(Keys(book.TakeDue(t0, seconds(0), 2)), (std::vector<std::string>{"ns/a", "ns/b"}));
  EXPECT_EQ(Keys(book.TakeDue(t0, seconds(0), 2)), std::vector<std::string>{"ns/c"});
  EXPECT_TRUE(book.TakeDue(t0, seconds(0), 2).empty());
}

TEST(RefusedPodsTest, EqualCandidateListsAreKeptOnce) {
  RefusedPods book;
  const Names first = {"n1", "n2"};
  const Names same = {"n1", "n2"};
  const Names other = {"n2"};
  book.Refused("ns/a", &first);
  book.Refused("ns/b", &same);
  book.Refused("ns/c", &other);
  book.ViewChanged();
  auto due = book.TakeDue(RefusedPods::Clock::time_point{}, seconds(0), 10);
  ASSERT_EQ(due.size(), 3u);
  EXPECT_EQ(due[0].candidates, due[1].candidates);
  EXPECT_EQ(*due[2].candidates, other);
}

// Lists that differ every time (a client making them up) stop at the budget: a pod whose list
// would pass it is not followed, and what is held goes back down as pods leave.
TEST(RefusedPodsTest, CandidateListsStayWithinTheBudget) {
  RefusedPods book(/*max_held_names=*/10);
  for (int i = 0; i < 20; ++i) {
    const Names made_up = {"x" + std::to_string(i), "y" + std::to_string(i), "z"};
    book.Refused("ns/p" + std::to_string(i), &made_up);
    EXPECT_LE(book.held_names(), 10u);
  }
  EXPECT_EQ(book.size(), 3u);
  EXPECT_EQ(book.held_names(), 9u);
  EXPECT_TRUE(book.Contains("ns/p0"));
  EXPECT_FALSE(book.Contains("ns/p3"));
  book.Refused("ns/every", nullptr);  // refused among every node: no list to hold
  EXPECT_TRUE(book.Contains("ns/every"));
  for (int i = 0; i < 3; ++i) book.Forget("ns/p" + std::to_string(i));
  EXPECT_EQ(book.held_names(), 0u);
}

}  // namespace
}  // namespace tessera::scheduler
