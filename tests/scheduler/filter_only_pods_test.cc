#include "scheduler/filter_only_pods.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::scheduler {
namespace {

using std::chrono::seconds;

TEST(FilterOnlyPodsTest, AFloodBeyondTheCapKeepsTheMostRecentlyNamed) {
  FilterOnlyPods pods;
  const FilterOnlyPods::Clock::time_point t0{};
  std::vector<std::string> dropped;
  for (size_t i = 0; i < FilterOnlyPods::kDefaultMaxPods + 500; ++i) {
    for (auto& key : pods.Named("ns/p" + std::to_string(i), t0)) dropped.push_back(key);
    if (i + 1 == FilterOnlyPods::kDefaultMaxPods) pods.Named("ns/p0", t0);  // the newest again
  }
  EXPECT_EQ(pods.size(), FilterOnlyPods::kDefaultMaxPods);
  ASSERT_EQ(dropped.size(), 500u);
  EXPECT_EQ(dropped.front(), "ns/p1");
  EXPECT_TRUE(pods.Contains("ns/p0"));
  EXPECT_FALSE(pods.Contains("ns/p500"));
  EXPECT_TRUE(pods.Contains("ns/p501"));
}

TEST(FilterOnlyPodsTest, PodsNotNamedForTheTtlExpireAndTheFeedsAreForgotten) {
  FilterOnlyPods pods(10);
  const FilterOnlyPods::Clock::time_point t0{};
  pods.Named("ns/a", t0);
  pods.Named("ns/b", t0 + seconds(10));
  pods.Named("ns/c", t0 + seconds(20));
  pods.Forget("ns/c");  // the informer showed it
  EXPECT_TRUE(pods.Expire(t0 + seconds(59), seconds(60)).empty());
  EXPECT_EQ(pods.Expire(t0 + seconds(60), seconds(60)), std::vector<std::string>{"ns/a"});
  pods.Named("ns/b", t0 + seconds(65));  // named again: its time starts over
  EXPECT_TRUE(pods.Expire(t0 + seconds(100), seconds(60)).empty());
  EXPECT_EQ(pods.Expire(t0 + seconds(125), seconds(60)), std::vector<std::string>{"ns/b"});
  EXPECT_EQ(pods.size(), 0u);
}

}  // namespace
}  // namespace tessera::scheduler
