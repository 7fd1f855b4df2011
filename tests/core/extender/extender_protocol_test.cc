#include "core/extender/extender_protocol.h"

#include <gtest/gtest.h>

namespace tessera::extender {
namespace {

using codec::Json;

TEST(ExtenderProtocol, DecodesNodeNamesAndPodWithGoFieldNames) {
  auto args =
      DecodeExtenderArgs(R"({"Pod":{"metadata":{"name":"p"}},"Nodes":null,"NodeNames":["a","b"]})");
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_EQ(args->pod["metadata"]["name"], "p");
  ASSERT_TRUE(args->node_names.has_value());
  EXPECT_EQ(*args->node_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(args->nodes.has_value());
  EXPECT_EQ(CandidateNames(*args), (std::vector<std::string>{"a", "b"}));
}

TEST(ExtenderProtocol, KeysMatchCaseInsensitivelyAsGoDecodes) {
  auto args = DecodeExtenderArgs(R"({"pod":{"metadata":{"name":"p"}},"nodenames":["a"]})");
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_EQ(*args->node_names, std::vector<std::string>{"a"});
}

TEST(ExtenderProtocol, NodeListFormGivesCandidateNames) {
  auto args = DecodeExtenderArgs(
      R"({"Pod":{},"Nodes":{"items":[{"metadata":{"name":"x"}},{"metadata":{"name":"y"}}]},"NodeNames":null})");
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_FALSE(args->node_names.has_value());
  ASSERT_TRUE(args->nodes.has_value());
  EXPECT_EQ(CandidateNames(*args), (std::vector<std::string>{"x", "y"}));
}

TEST(ExtenderProtocol, MissingPodIsHamisError) {
  auto args = DecodeExtenderArgs(R"({"NodeNames":["a"]})");
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.error().message, "extender args missing pod");
}

TEST(ExtenderProtocol, BadNodeNameEntryNamesTheField) {
  auto args = DecodeExtenderArgs(R"({"Pod":{},"NodeNames":["a",3]})");
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.error().message, "ExtenderArgs.NodeNames[1]: expected a string");
}

TEST(ExtenderProtocol, MalformedJsonIsAnErrorNotACrash) {
  auto args = DecodeExtenderArgs(R"({"Pod":{"metadata":)");
  ASSERT_FALSE(args.ok());
  EXPECT_NE(args.error().message.find("ExtenderArgs: invalid JSON"), std::string::npos);
  EXPECT_FALSE(DecodeExtenderArgs("[1,2]").ok());
}

TEST(ExtenderProtocol, FilterResultUsesGoNamesAndNulls) {
  FilterResult r;
  r.node_names = std::vector<std::string>{"node2"};
  EXPECT_EQ(Json::parse(EncodeFilterResult(r)),
            Json::parse(R"({"Nodes":null,"NodeNames":["node2"],"FailedNodes":null,)"
                        R"("FailedAndUnresolvableNodes":null,"Error":""})"));
  FilterResult failed;
  failed.failed_nodes = {{"node1", "1/1 CardInsufficientMemory"}};
  Json j = Json::parse(EncodeFilterResult(failed));
  EXPECT_TRUE(j["NodeNames"].is_null());
  EXPECT_EQ(j["FailedNodes"]["node1"], "1/1 CardInsufficientMemory");
}

TEST(ExtenderProtocol, FilterResultNodeListForm) {
  FilterResult r;
  r.nodes = std::vector<Json>{Json{{"metadata", {{"name", "n"}}}}};
  Json j = Json::parse(EncodeFilterResult(r));
  EXPECT_EQ(j["Nodes"]["items"][0]["metadata"]["name"], "n");
  EXPECT_TRUE(j["NodeNames"].is_null());
}

TEST(ExtenderProtocol, BindingArgsRoundTrip) {
  auto b =
      DecodeBindingArgs(R"({"PodName":"p","PodNamespace":"ns","PodUID":"u-1","Node":"node-a"})");
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->PodKey(), "ns/p");
  EXPECT_EQ(b->pod_uid, "u-1");
  EXPECT_EQ(b->node, "node-a");
  EXPECT_EQ(Json::parse(EncodeBindingResult("")), Json::parse(R"({"Error":""})"));
}

TEST(ExtenderProtocol, BindingArgsMissingNodeNamesTheField) {
  auto b = DecodeBindingArgs(R"({"PodName":"p","PodNamespace":"ns"})");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().message, "ExtenderBindingArgs.Node: missing");
}

// The uid ties the bind to the pod its filter saw, never to a new pod of the same name.
TEST(ExtenderProtocol, BindingArgsWithoutAPodUidAreRefused) {
  for (const char* body : {R"({"PodName":"p","PodNamespace":"ns","Node":"n"})",
                           R"({"PodName":"p","PodNamespace":"ns","PodUID":"","Node":"n"})"}) {
    auto no_uid = DecodeBindingArgs(body);
    ASSERT_FALSE(no_uid.ok()) << body;
    EXPECT_EQ(no_uid.error().message, "ExtenderBindingArgs.PodUID: missing");
  }
}

TEST(ExtenderProtocol, HostPriorityList) {
  EXPECT_EQ(Json::parse(EncodeHostPriorityList({{"a", 10}, {"b", 0}})),
            Json::parse(R"([{"Host":"a","Score":10},{"Host":"b","Score":0}])"));
  EXPECT_EQ(EncodeHostPriorityList({}), "[]");
}

}  // namespace
}  // namespace tessera::extender
