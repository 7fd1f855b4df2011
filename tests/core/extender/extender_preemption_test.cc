#include "core/extender/extender_preemption.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tessera::extender {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kPod = R"({"metadata":{"name":"p","namespace":"default","uid":"u-p"}})";

std::string Body(const std::string& rest) { return std::string(R"({"Pod":)") + kPod + rest + "}"; }

TEST(ExtenderPreemptionTest, DecodesMetaVictims) {
  auto args = DecodePreemptionArgs(Body(
      R"(,"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"a"},{"UID":"b"}],"NumPDBViolations":1},"n2":null})"));
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_EQ(args->pod["metadata"]["name"], "p");
  ASSERT_EQ(args->victims_by_node.size(), 2U);
  EXPECT_THAT(args->victims_by_node.at("n1").pod_uids, ElementsAre("a", "b"));
  EXPECT_EQ(args->victims_by_node.at("n1").num_pdb_violations, 1);
  EXPECT_TRUE(args->victims_by_node.at("n2").pod_uids.empty());
}

// A scheduler without nodeCacheCapable sends whole pods: their uids are what is kept.
TEST(ExtenderPreemptionTest, DecodesWholePodVictimsAsUids) {
  auto args = DecodePreemptionArgs(Body(
      R"(,"NodeNameToVictims":{"n1":{"Pods":[{"metadata":{"name":"v","uid":"u-v"},"spec":{}}],"NumPDBViolations":0}},"NodeNameToMetaVictims":null)"));
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_THAT(args->victims_by_node.at("n1").pod_uids, ElementsAre("u-v"));
}

// Go's decoder matches keys without regard to case; so does this one.
TEST(ExtenderPreemptionTest, KeysMatchInAnyCase) {
  auto args = DecodePreemptionArgs(
      Body(R"(,"nodenametometavictims":{"n1":{"pods":[{"uid":"a"}],"numpdbviolations":2}})"));
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_THAT(args->victims_by_node.at("n1").pod_uids, ElementsAre("a"));
  EXPECT_EQ(args->victims_by_node.at("n1").num_pdb_violations, 2);
}

TEST(ExtenderPreemptionTest, NoVictimMapsIsNoCandidates) {
  auto args = DecodePreemptionArgs(Body(""));
  ASSERT_TRUE(args.ok());
  EXPECT_TRUE(args->victims_by_node.empty());
}

TEST(ExtenderPreemptionTest, MalformedInputIsRefusedWithTheField) {
  auto error = [](const std::string& body) {
    auto args = DecodePreemptionArgs(body);
    EXPECT_FALSE(args.ok()) << body;
    return args.ok() ? std::string() : args.error().message;
  };
  EXPECT_THAT(error("not json"), HasSubstr("ExtenderPreemptionArgs"));
  EXPECT_THAT(error("[]"), HasSubstr("expected a JSON object"));
  EXPECT_THAT(error("{}"), HasSubstr("Pod: missing"));
  EXPECT_THAT(error(R"({"Pod":3})"), HasSubstr("Pod: expected an object"));
  EXPECT_THAT(error(Body(R"(,"NodeNameToMetaVictims":[])")), HasSubstr("expected an object"));
  EXPECT_THAT(error(Body(R"(,"NodeNameToMetaVictims":{"n1":7})")),
              HasSubstr(R"(NodeNameToMetaVictims["n1"]: expected an object)"));
  EXPECT_THAT(error(Body(R"(,"NodeNameToMetaVictims":{"n1":{"Pods":{}}})")),
              HasSubstr("Pods: expected a list"));
  EXPECT_THAT(error(Body(R"(,"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":5}]}})")),
              HasSubstr(R"(["n1"].Pods[0].UID: expected a string)"));
  EXPECT_THAT(error(Body(R"(,"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":""}]}})")),
              HasSubstr("UID: missing"));
  EXPECT_THAT(error(Body(R"(,"NodeNameToMetaVictims":{"n1":{"Pods":[null]}})")),
              HasSubstr("Pods[0]: expected an object"));
  EXPECT_THAT(error(Body(R"(,"NodeNameToVictims":{"n1":{"Pods":[{"spec":{}}]}})")),
              HasSubstr("Pods[0].metadata: missing"));
  EXPECT_THAT(error(Body(R"(,"NodeNameToMetaVictims":{"n1":{"NumPDBViolations":-1}})")),
              HasSubstr("out of range"));
  EXPECT_THAT(error(Body(R"(,"NodeNameToMetaVictims":{"n1":{"NumPDBViolations":"x"}})")),
              HasSubstr("expected a number"));
  EXPECT_THAT(error(Body(R"(,"NodeNameToMetaVictims":{"":{}})")), HasSubstr("without a name"));
  // Nesting deep enough to overflow a recursive reader is refused before parsing.
  EXPECT_THAT(error(std::string(100000, '[')), HasSubstr("ExtenderPreemptionArgs"));
}

TEST(ExtenderPreemptionTest, LongNodeNamesAreCutInErrors) {
  const std::string name(5000, 'n');
  auto args =
      DecodePreemptionArgs(Body(R"(,"NodeNameToMetaVictims":{")" + name + R"(":{"Pods":7}})"));
  ASSERT_FALSE(args.ok());
  EXPECT_LT(args.error().message.size(), 200U);
}

TEST(ExtenderPreemptionTest, TooManyNodesOrVictimsAreRefused) {
  PreemptionArgsLimits limits;
  limits.max_nodes = 2;
  limits.max_victims_per_node = 2;
  auto nodes = DecodePreemptionArgs(
      Body(R"(,"NodeNameToMetaVictims":{"a":null,"b":null,"c":null})"), limits);
  ASSERT_FALSE(nodes.ok());
  EXPECT_THAT(nodes.error().message, HasSubstr("more than 2 nodes"));
  // The two maps together count too.
  auto both = DecodePreemptionArgs(
      Body(R"(,"NodeNameToVictims":{"a":null,"b":null},"NodeNameToMetaVictims":{"c":null})"),
      limits);
  ASSERT_FALSE(both.ok());
  auto victims = DecodePreemptionArgs(
      Body(R"(,"NodeNameToMetaVictims":{"a":{"Pods":[{"UID":"1"},{"UID":"2"},{"UID":"3"}]}})"),
      limits);
  ASSERT_FALSE(victims.ok());
  EXPECT_THAT(victims.error().message, HasSubstr("more than 2 victims"));
}

TEST(ExtenderPreemptionTest, EncodesMetaVictimsByNode) {
  std::map<std::string, MetaVictims> result;
  result["n1"] = MetaVictims{{"a", "b"}, 1};
  EXPECT_EQ(
      EncodePreemptionResult(result),
      R"({"NodeNameToMetaVictims":{"n1":{"NumPDBViolations":1,"Pods":[{"UID":"a"},{"UID":"b"}]}}})");
  EXPECT_EQ(EncodePreemptionResult({}), R"({"NodeNameToMetaVictims":{}})");
}

}  // namespace
}  // namespace tessera::extender
