#include "core/extender/extender_args_decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::extender {
namespace {

const std::string kPod =
    R"({"metadata":{"name":"p","namespace":"ns","uid":"u1","annotations":{"a":"\u00e9"}},)"
    R"("spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})";

// What kube-scheduler sends with nodeCacheCapable: the pod and every node name.
std::string SchedulerBody(int nodes) {
  std::string names;
  for (int i = 0; i < nodes; ++i) names += (i ? ",\"node-" : "\"node-") + std::to_string(i) + "\"";
  return R"({"Pod":)" + kPod + R"(,"Nodes":null,"NodeNames":[)" + names + "]}";
}

void ExpectSameAsGeneral(ExtenderArgsDecoder& decoder, const std::string& body) {
  auto fast = decoder.Decode(body);
  auto general = DecodeExtenderArgs(body);
  ASSERT_EQ(fast.ok(), general.ok()) << body;
  if (!fast.ok()) {
    EXPECT_EQ(fast.error().message, general.error().message) << body;
    return;
  }
  EXPECT_EQ(fast->pod, general->pod) << body;
  EXPECT_EQ(fast->node_names, general->node_names) << body;
  EXPECT_EQ(fast->nodes, general->nodes) << body;
}

TEST(ExtenderArgsDecoderTest, KubeSchedulersBodyIsReadOnDemandAndMatchesTheGeneralDecoder) {
  ExtenderArgsDecoder decoder;
  for (int nodes : {0, 1, 3, 5000}) {
    const std::string body = SchedulerBody(nodes);
    auto args = decoder.Decode(body);
    ASSERT_TRUE(args.ok()) << args.error().message;
    EXPECT_TRUE(decoder.last_was_on_demand());
    ASSERT_TRUE(args->node_names.has_value());
    ASSERT_EQ(args->node_names->size(), static_cast<size_t>(nodes));
    if (nodes > 0) {
      EXPECT_EQ(args->node_names->back(), "node-" + std::to_string(nodes - 1));
    }
    EXPECT_EQ(args->pod["metadata"]["annotations"]["a"], "\xc3\xa9");
    EXPECT_FALSE(args->nodes.has_value());
    ExpectSameAsGeneral(decoder, body);
  }
}

TEST(ExtenderArgsDecoderTest, EscapedNamesAndNullListsDecodeAsTheGeneralDecoderDoes) {
  ExtenderArgsDecoder decoder;
  const std::vector<std::string> bodies = {
      R"({"Pod":)" + kPod + R"(,"NodeNames":["n\u0031","a\"b"]})",
      R"({"Pod":)" + kPod + R"(,"NodeNames":null})",
      R"({"Pod":)" + kPod + "}",
      " \n{ \"Pod\" : " + kPod + " , \"NodeNames\" : [ \"x\" ] } \n",
  };
  for (const auto& body : bodies) {
    ExpectSameAsGeneral(decoder, body);
    EXPECT_TRUE(decoder.last_was_on_demand()) << body;
  }
}

// Everything else goes to the general decoder: same values, same messages.
TEST(ExtenderArgsDecoderTest, OtherBodiesGetTheGeneralDecodersAnswer) {
  ExtenderArgsDecoder decoder;
  const std::vector<std::string> bodies = {
      "",
      "[]",
      "{",
      R"({"Pod":)" + kPod + R"(,"NodeNames":["a"]} trailing)",
      R"({"Pod":)" + kPod + R"(,"NodeNames":["a",7]})",
      R"({"Pod":)" + kPod + R"(,"NodeNames":"a"})",
      R"({"pod":)" + kPod + R"(,"nodenames":["a"]})",
      R"({"Pod":)" + kPod + R"(,"Pod":{},"NodeNames":["a"]})",
      R"({"Pod":)" + kPod + R"(,"NodeNames":["a"],"NodeNames":["b"]})",
      R"({"Pod":)" + kPod + R"(,"Other":tru,"NodeNames":["a"]})",
      R"({"Pod":)" + kPod + R"(,"Nodes":{"items":[{"metadata":{"name":"n1"}}]}})",
      R"({"Pod":null,"NodeNames":["a"]})",
      R"({"Pod":[],"NodeNames":["a"]})",
      R"({"NodeNames":["a"]})",
      R"({"Pod":{"metadata":{"name":"p"},"spec":{"x":01}},"NodeNames":["a"]})",
      "{\"Pod\":" + kPod + ",\"NodeNames\":[\"\xff\"]}",
  };
  for (const auto& body : bodies) {
    ExpectSameAsGeneral(decoder, body);
    EXPECT_FALSE(decoder.last_was_on_demand()) << body;
  }
}

// A list longer than the caller allows is refused on either path, with the same message, and
// the on-demand path does not read past the limit.
TEST(ExtenderArgsDecoderTest, MoreNodesThanAllowedAreRefusedOnEitherPath) {
  ExtenderArgsDecoder decoder;
  const std::string too_many =
      "ExtenderArgs.NodeNames: more than 100 nodes, the most this scheduler takes in one request";
  auto fast = decoder.Decode(SchedulerBody(101), 100);
  ASSERT_FALSE(fast.ok());
  EXPECT_EQ(fast.error().message, too_many);
  auto general = DecodeExtenderArgs(SchedulerBody(101), 100);
  ASSERT_FALSE(general.ok());
  EXPECT_EQ(general.error().message, too_many);
  ASSERT_TRUE(decoder.Decode(SchedulerBody(100), 100).ok());
  EXPECT_TRUE(decoder.last_was_on_demand());
  std::string items;
  for (int i = 0; i < 3; ++i) items += (i ? "," : "") + std::string(R"({"metadata":{"name":"n"}})");
  const std::string objects = R"({"Pod":)" + kPod + R"(,"Nodes":{"items":[)" + items + "]}}";
  auto refused = decoder.Decode(objects, 2);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "ExtenderArgs.Nodes.items: more than 2 nodes, the most this scheduler takes in one "
            "request");
  EXPECT_TRUE(decoder.Decode(objects, 3).ok());
}

// The buffers are kept between bodies of ordinary size, and freed after a body too large to
// keep them for (the parser's own are several times its size).
TEST(ExtenderArgsDecoderTest, BuffersOfALargeBodyAreFreedAfterIt) {
  ExtenderArgsDecoder decoder;
  const std::string ordinary = SchedulerBody(60000);  // about 700 KiB
  ASSERT_TRUE(decoder.Decode(ordinary).ok());
  EXPECT_GE(decoder.retained_capacity(), ordinary.size());
  const std::string large = SchedulerBody(600000);
  ASSERT_GT(large.size(), ExtenderArgsDecoder::kMaxRetainedCapacity);
  auto args = decoder.Decode(large);
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(args->node_names->size(), 600000u);
  EXPECT_LE(decoder.retained_capacity(), ExtenderArgsDecoder::kMaxRetainedCapacity);
  // Also when the large body is refused.
  ASSERT_FALSE(decoder.Decode(large, 1000).ok());
  EXPECT_LE(decoder.retained_capacity(), ExtenderArgsDecoder::kMaxRetainedCapacity);
  ASSERT_TRUE(decoder.Decode(ordinary).ok());
  EXPECT_TRUE(decoder.last_was_on_demand());
}

}  // namespace
}  // namespace tessera::extender
