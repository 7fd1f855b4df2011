#include "scheduler/filter_answers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::scheduler {
namespace {

using Verdict = FilterAnswers::Verdict;

TEST(FilterAnswersTest, BindGoesOnlyWhereTheLastAnswerSaidForTheSameUid) {
  FilterAnswers answers;
  EXPECT_EQ(answers.ForBind("ns/p", "u1", "n1").verdict, Verdict::kNoAnswer);
  answers.Placed("ns/p", "u1", "n1");
  EXPECT_EQ(answers.ForBind("ns/p", "u1", "n1").verdict, Verdict::kOffered);
  EXPECT_EQ(answers.ForBind("ns/p", "u1", "n2").verdict, Verdict::kNotOffered);
  EXPECT_EQ(answers.ForBind("ns/p", "u2", "n1").verdict, Verdict::kOtherUid);
  ASSERT_TRUE(answers.PassedThrough("ns/p", "u1", {"n2", "n3"}));  // the newer answer counts
  EXPECT_EQ(answers.ForBind("ns/p", "u1", "n1").verdict, Verdict::kNotOffered);
  EXPECT_EQ(answers.ForBind("ns/p", "u1", "n3").verdict, Verdict::kOffered);
  answers.Bound("ns/p", "u2", "n3");  // another pod's bind says nothing of this one
  EXPECT_EQ(answers.ForBind("ns/p", "u1", "n3").verdict, Verdict::kOffered);
  answers.Bound("ns/p", "u1", "n3");
  EXPECT_EQ(answers.ForBind("ns/p", "u1", "n3").verdict, Verdict::kAlreadyBound);
  const FilterAnswers::Check elsewhere = answers.ForBind("ns/p", "u1", "n2");
  EXPECT_EQ(elsewhere.verdict, Verdict::kBoundElsewhere);
  EXPECT_EQ(elsewhere.bound_node, "n3");
  answers.ForgetOtherUid("ns/p", "u1");
  EXPECT_EQ(answers.size(), 1u);
  answers.ForgetOtherUid("ns/p", "u9");
  EXPECT_EQ(answers.size(), 0u);
}

TEST(FilterAnswersTest, PassThroughListsStayWithinTheBudgetOldestAnswersFirst) {
  FilterAnswers answers(/*max_held_names=*/10);
  const std::vector<std::string> same = {"a", "b", "c", "d"};
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(answers.PassedThrough("ns/s" + std::to_string(i), "u", same));
  EXPECT_EQ(answers.held_names(), 4u) << "kube-scheduler's repeated list is held once";
  // Lists that differ every time: the oldest answers give way.
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(answers.PassedThrough("ns/d" + std::to_string(i), "u",
                                      {"x" + std::to_string(i), "y", "z"}));
    EXPECT_LE(answers.held_names(), 10u);
  }
  EXPECT_FALSE(answers.Contains("ns/s0"));
  EXPECT_FALSE(answers.Contains("ns/d0"));
  EXPECT_TRUE(answers.Contains("ns/d4"));
  EXPECT_EQ(answers.ForBind("ns/d4", "u", "x4").verdict, Verdict::kOffered);
  // A list beyond the whole budget is not kept: nothing is offered.
  EXPECT_FALSE(answers.PassedThrough("ns/huge", "u", std::vector<std::string>(11, "n")));
  EXPECT_EQ(answers.ForBind("ns/huge", "u", "n").verdict, Verdict::kNoAnswer);
  answers.ForgetIf([](const std::string&) { return true; });
  EXPECT_EQ(answers.size(), 0u);
  EXPECT_EQ(answers.held_names(), 0u);
}

}  // namespace
}  // namespace tessera::scheduler
