#include "core/codec/json_util.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::codec {
namespace {

std::string NestedArrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonNestingDepthTest, CountsArraysAndObjectsButNotBracketsInStrings) {
  EXPECT_EQ(JsonNestingDepth("1", 10), 0);
  EXPECT_EQ(JsonNestingDepth(R"({"a":[1,{"b":[]}]})", 10), 4);
  EXPECT_EQ(JsonNestingDepth(R"({"a":"[[[[{{{{"})", 10), 1);
  // An escaped quote does not end the string; an escaped backslash before the quote does.
  EXPECT_EQ(JsonNestingDepth(R"(["\"[[[", "\\", [[]]])", 10), 3);
}

TEST(JsonNestingDepthTest, StopsOnceDeeperThanTheLimit) {
  EXPECT_EQ(JsonNestingDepth(NestedArrays(128), 128), 128);
  EXPECT_EQ(JsonNestingDepth(NestedArrays(100000), 128), 129);
}

TEST(ParseJsonTest, RefusesNestingDeeperThanTheLimitWithoutParsing) {
  ASSERT_TRUE(ParseJson(NestedArrays(kMaxJsonNesting), "body").ok());
  auto deep = ParseJson(NestedArrays(100000), "ExtenderArgs");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().message, "ExtenderArgs: JSON nested deeper than 128 levels");
}

TEST(DescribeJsonValueTest, NamesContainersBySizeAndCutsLongScalarsBetweenCharacters) {
  EXPECT_EQ(DescribeJsonValue(Json::array({1, 2, 3})), "an array of 3 items");
  EXPECT_EQ(DescribeJsonValue(Json::object({{"a", 1}})), "an object of 1 keys");
  EXPECT_EQ(DescribeJsonValue(Json::array()), "[]");
  EXPECT_EQ(DescribeJsonValue(Json::object()), "{}");
  EXPECT_EQ(DescribeJsonValue(Json(7)), "7");
  EXPECT_EQ(DescribeJsonValue(Json("short")), "\"short\"");
  // 39 ASCII characters then a two-byte one: the cut comes before it, never inside.
  const std::string text = "\"" + std::string(38, 'x') + "\xc3\xa9tail";
  const std::string described = DescribeJsonValue(Json::parse(text + "\""));
  EXPECT_EQ(described, "\"" + std::string(38, 'x') + "…");
  EXPECT_NO_THROW(Json(described).dump());  // valid UTF-8
}

TEST(ReadStringTest, AWrongTypeIsDescribedNotPrinted) {
  Json obj = Json::parse(R"({"name": [[[[1, 2]]]]})");
  std::string out;
  Status s = ReadString(obj, "name", "pod", &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "pod.name: expected a string, got an array of 1 items");
}

}  // namespace
}  // namespace tessera::codec
