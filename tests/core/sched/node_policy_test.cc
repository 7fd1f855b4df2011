#include "core/sched/node_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::sched {
namespace {

TEST(NodePolicyTest, TheBuiltInPoliciesAreListsOfOnePlugin) {
  const NodePolicy tessera = NodePolicy::Tessera();
  ASSERT_EQ(tessera.terms().size(), 1U);
  EXPECT_EQ(tessera.terms()[0], (NodeScoreTerm{NodeScorePlugin::kFragmentation, 1}));
  EXPECT_TRUE(tessera.counts_fragmentation());
  EXPECT_TRUE(tessera.fragmentation_only());
  EXPECT_EQ(tessera.Definition(), "tessera=fragmentation:1");
  EXPECT_EQ(NodePolicy::Binpack().Definition(), "binpack=hami-node-score:1");
  EXPECT_EQ(NodePolicy::Spread().Definition(), "spread=hami-node-score:-1");
  EXPECT_FALSE(NodePolicy::Binpack().counts_fragmentation());
  EXPECT_EQ(NodePolicy{}, NodePolicy::Tessera());
}

TEST(NodePolicyTest, TheRegistryNamesEveryPluginOnceInEnumOrder) {
  const auto plugins = NodeScorePlugins();
  ASSERT_EQ(plugins.size(), static_cast<size_t>(kNodeScorePluginCount));
  for (size_t i = 0; i < plugins.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(plugins[i].plugin), i);
    EXPECT_EQ(NameOf(plugins[i].plugin), plugins[i].name);
    EXPECT_FALSE(plugins[i].what.empty());
    // Each can be named in a definition.
    auto policy = ParseNodePolicyDefinition("p=" + std::string(plugins[i].name) + ":1");
    ASSERT_TRUE(policy.ok()) << policy.error().message;
    EXPECT_EQ(policy->terms()[0].plugin, plugins[i].plugin);
  }
}

TEST(NodePolicyTest, ADefinitionListsPluginsWithWeightsInOrder) {
  auto p =
      ParseNodePolicyDefinition(" pack-frag = fragmentation:1, hami-node-score:0.5 ,fullness:-2");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->name(), "pack-frag");
  ASSERT_EQ(p->terms().size(), 3U);
  EXPECT_EQ(p->terms()[0], (NodeScoreTerm{NodeScorePlugin::kFragmentation, 1}));
  EXPECT_EQ(p->terms()[1], (NodeScoreTerm{NodeScorePlugin::kHamiNodeScore, 0.5}));
  EXPECT_EQ(p->terms()[2], (NodeScoreTerm{NodeScorePlugin::kFullness, -2}));
  EXPECT_TRUE(p->counts_fragmentation());
  EXPECT_FALSE(p->fragmentation_only());
  EXPECT_EQ(p->Definition(), "pack-frag=fragmentation:1,hami-node-score:0.5,fullness:-2");
  // The definition it prints reads back as the same policy.
  EXPECT_EQ(ParseNodePolicyDefinition(p->Definition()).value(), *p);
}

TEST(NodePolicyTest, FragmentationAloneKeepsTheBoundsOnlyWithAPositiveWeight) {
  EXPECT_TRUE(ParseNodePolicyDefinition("f=fragmentation:3").value().fragmentation_only());
  EXPECT_FALSE(ParseNodePolicyDefinition("f=fragmentation:-1").value().fragmentation_only());
  EXPECT_TRUE(ParseNodePolicyDefinition("f=fragmentation:-1").value().counts_fragmentation());
}

TEST(NodePolicyTest, AMalformedDefinitionSaysWhichPartIsWrong) {
  struct Case {
    std::string text;
    std::string why;
  };
  const std::string plugins = "(plugins: fragmentation, hami-node-score, fullness)";
  const std::vector<Case> cases = {
      {"fragmentation:1", "expected NAME=PLUGIN:WEIGHT[,PLUGIN:WEIGHT...]"},
      {"=fragmentation:1", "the name is empty"},
      {"a b=fragmentation:1", "the name \"a b\" has a space, comma or colon"},
      {"binpack=fullness:1", "\"binpack\" is a built-in policy's name"},
      {"p=", "\"\" is not PLUGIN:WEIGHT " + plugins},
      {"p=fullness", "\"fullness\" is not PLUGIN:WEIGHT " + plugins},
      {"p=fullnes:1", "unknown plugin \"fullnes\" " + plugins},
      {"p=fullness:0", "plugin fullness: weight \"0\" is not a non-zero number"},
      {"p=fullness:x", "plugin fullness: weight \"x\" is not a non-zero number"},
      {"p=fullness:1e999", "plugin fullness: weight \"1e999\" is not a non-zero number"},
      {"p=fullness:inf", "plugin fullness: weight \"inf\" is not a non-zero number"},
      {"p=fullness:1x", "plugin fullness: weight \"1x\" is not a non-zero number"},
      {"p=fullness:1,fullness:2", "plugin fullness twice"},
      {"p=fullness:1,,fragmentation:1", "\"\" is not PLUGIN:WEIGHT " + plugins},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto p = ParseNodePolicyDefinition(c.text);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().message, "node policy definition \"" + c.text + "\": " + c.why);
  }
}

TEST(NodePolicyTest, ANameResolvesToABuiltInOrADefinedPolicy) {
  const std::vector<NodePolicy> defined = {
      ParseNodePolicyDefinition("pack=hami-node-score:2").value()};
  EXPECT_EQ(ParseNodePolicy(" pack ", defined).value(), defined[0]);
  EXPECT_EQ(ParseNodePolicy("binpack", defined).value(), NodePolicy::Binpack());
  auto unknown = ParseNodePolicy("packer", defined);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message,
            "unknown node scheduler policy \"packer\" (expected tessera, binpack, spread, pack)");
}

TEST(NodePolicyTest, AddedDefinitionsReplaceEarlierOnesOfTheirName) {
  std::vector<NodePolicy> policies = {ParseNodePolicyDefinition("a=fullness:1").value(),
                                      ParseNodePolicyDefinition("b=fullness:2").value()};
  const std::vector<std::string> flags = {"b=hami-node-score:1", "c=fragmentation:1"};
  ASSERT_TRUE(AddNodePolicyDefinitions(flags, &policies).ok());
  ASSERT_EQ(policies.size(), 3U);
  EXPECT_EQ(policies[0].Definition(), "a=fullness:1");
  EXPECT_EQ(policies[1].Definition(), "b=hami-node-score:1");
  EXPECT_EQ(policies[2].Definition(), "c=fragmentation:1");
  // A bad definition changes nothing.
  const std::vector<std::string> bad = {"a=fragmentation:1", "d=nothing:1"};
  const Status s = AddNodePolicyDefinitions(bad, &policies);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unknown plugin \"nothing\""), std::string::npos) << s.message();
  EXPECT_EQ(policies[0].Definition(), "a=fullness:1");
  EXPECT_EQ(policies.size(), 3U);
}

}  // namespace
}  // namespace tessera::sched
