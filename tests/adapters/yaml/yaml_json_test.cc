#include "adapters/yaml/yaml_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::adapters {
namespace {

using ::testing::HasSubstr;

TEST(ParseYamlTest, PlainScalarsFollowTheCoreSchemaQuotedOnesStayStrings) {
  auto j = ParseYaml("a: 2\nb: \"2\"\nc: true\nd: 1.5e3\ne: 16Gi\nf: ~\ng: -7\n", "test.yaml");
  ASSERT_TRUE(j.ok()) << j.error().message;
  EXPECT_EQ((*j)["a"], 2);
  EXPECT_EQ((*j)["b"], "2");
  EXPECT_EQ((*j)["c"], true);
  EXPECT_EQ((*j)["d"], 1500.0);
  EXPECT_EQ((*j)["e"], "16Gi");
  EXPECT_TRUE((*j)["f"].is_null());
  EXPECT_EQ((*j)["g"], -7);
}

TEST(ParseYamlTest, SyntaxErrorsNameTheSourceAndLine) {
  auto j = ParseYaml("a: [1, 2\nb: 3\n", "bad.yaml");
  ASSERT_FALSE(j.ok());
  EXPECT_THAT(j.error().message, HasSubstr("bad.yaml: invalid YAML at line"));
}

TEST(ParseYamlTest, AliasExpansionIsCapped) {
  std::string text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  const char* names = "abcdefg";
  for (int i = 1; i < 7; ++i) {
    text += std::string(1, names[i]) + ": &" + names[i] + " [";
    for (int k = 0; k < 10; ++k) text += std::string(k ? ", " : "") + "*" + names[i - 1];
    text += "]\n";
  }
  auto j = ParseYaml(text, "laughs.yaml");
  ASSERT_FALSE(j.ok());
  EXPECT_THAT(j.error().message, HasSubstr("alias expansion"));
}

TEST(ParseYamlTest, InvalidUtf8IsAnErrorNotACrash) {
  auto j = ParseYaml("a: \"\xff\xfe\"\n", "utf.yaml");
  ASSERT_FALSE(j.ok());
  EXPECT_THAT(j.error().message, HasSubstr("invalid UTF-8"));
}

TEST(ReadFileTest, MissingFileNamesThePath) {
  auto r = ReadFile("/nonexistent/tessera.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("/nonexistent/tessera.yaml"));
}

}  // namespace
}  // namespace tessera::adapters
