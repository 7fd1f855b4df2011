#include "core/model/disruption_budget.h"

#include <gtest/gtest.h>

namespace tessera::model {
namespace {

using Op = LabelRequirement::Operator;

TEST(DisruptionBudgetTest, MatchLabelsSelectPodsOfItsNamespaceHoldingEveryPair) {
  const DisruptionBudget b{"db", {{"app", "db"}, {"tier", "a"}}, 0};
  EXPECT_TRUE(b.Selects("db", {{"app", "db"}, {"tier", "a"}, {"x", "y"}}));
  EXPECT_FALSE(b.Selects("db", {{"app", "db"}}));
  EXPECT_FALSE(b.Selects("web", {{"app", "db"}, {"tier", "a"}}));
}

TEST(DisruptionBudgetTest, AnEmptySelectorSelectsTheWholeNamespaceAndNoSelectorNothing) {
  DisruptionBudget b{"db", {}, 0};
  EXPECT_TRUE(b.Selects("db", {}));
  EXPECT_FALSE(b.Selects("web", {}));
  b.no_selector = true;
  EXPECT_FALSE(b.Selects("db", {}));
}

// Kubernetes' label selector rules: NotIn and DoesNotExist match a pod without the label.
TEST(DisruptionBudgetTest, MatchExpressionsFollowKubernetesRules) {
  DisruptionBudget b{"ns", {}, 0};
  b.match_expressions = {{"app", Op::kIn, {"a", "b"}}};
  EXPECT_TRUE(b.Selects("ns", {{"app", "b"}}));
  EXPECT_FALSE(b.Selects("ns", {{"app", "c"}}));
  EXPECT_FALSE(b.Selects("ns", {}));
  b.match_expressions = {{"app", Op::kNotIn, {"a"}}};
  EXPECT_TRUE(b.Selects("ns", {}));
  EXPECT_TRUE(b.Selects("ns", {{"app", "c"}}));
  EXPECT_FALSE(b.Selects("ns", {{"app", "a"}}));
  b.match_expressions = {{"app", Op::kExists, {}}, {"canary", Op::kDoesNotExist, {}}};
  EXPECT_TRUE(b.Selects("ns", {{"app", "x"}}));
  EXPECT_FALSE(b.Selects("ns", {{"app", "x"}, {"canary", "1"}}));
  EXPECT_FALSE(b.Selects("ns", {}));
}

}  // namespace
}  // namespace tessera::model
