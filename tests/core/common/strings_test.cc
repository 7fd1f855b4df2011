#include "core/common/strings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(SplitKeepEmptyTest, KeepsEmptyPiecesBetweenAndAroundSeparators) {
  EXPECT_THAT(SplitKeepEmpty(";a;;b;", ';'), ElementsAre("", "a", "", "b", ""));
}

TEST(SplitKeepEmptyTest, EmptyTextIsOneEmptyPiece) {
  EXPECT_THAT(SplitKeepEmpty("", ';'), ElementsAre(""));
}

TEST(SplitKeepEmptyTest, TextWithoutSeparatorIsOnePiece) {
  EXPECT_THAT(SplitKeepEmpty("GPU-0,NVIDIA,1,0", ';'), ElementsAre("GPU-0,NVIDIA,1,0"));
}

TEST(SplitTrimmedTest, TrimsPiecesAndDropsEmptyOnes) {
  EXPECT_THAT(SplitTrimmed(" A100 ,, V100,\t,", ','), ElementsAre("A100", "V100"));
}

TEST(SplitTrimmedTest, WhitespaceOnlyTextHasNoPieces) {
  EXPECT_THAT(SplitTrimmed("  ", ','), IsEmpty());
}

TEST(TrimTest, RemovesLeadingAndTrailingWhitespaceOnly) {
  EXPECT_EQ(Trim(" \t a b \n"), "a b");
  EXPECT_EQ(Trim("   "), "");
  EXPECT_EQ(Trim(""), "");
}

TEST(CaseTest, ToLowerAndToUpperChangeAsciiLettersOnly) {
  EXPECT_EQ(ToLower("NVIDIA A100-SXM4"), "nvidia a100-sxm4");
  EXPECT_EQ(ToUpper("nvidia a100-sxm4"), "NVIDIA A100-SXM4");
}

TEST(EqualsIgnoreCaseTest, ComparesAsciiLettersWithoutCase) {
  EXPECT_TRUE(EqualsIgnoreCase("devMem", "DEVMEM"));
  EXPECT_FALSE(EqualsIgnoreCase("devmem", "devmem2"));
  EXPECT_FALSE(EqualsIgnoreCase("devmem", "devmen"));
}

TEST(AffixTest, StartsWithAndEndsWith) {
  EXPECT_TRUE(StartsWith("Requesting_2026", "Requesting_"));
  EXPECT_FALSE(StartsWith("Req", "Requesting_"));
  EXPECT_TRUE(EndsWith("1g.10gb+me", "+me"));
  EXPECT_FALSE(EndsWith("me", "+me"));
  EXPECT_TRUE(StartsWith("x", ""));
  EXPECT_TRUE(EndsWith("x", ""));
}

TEST(JoinTest, JoinsWithSeparatorBetweenPartsOnly) {
  EXPECT_EQ(Join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(Join({"a"}, ", "), "a");
  EXPECT_EQ(Join({}, ", "), "");
}

TEST(ParseGoBoolTest, AcceptsExactlyGoStrconvParseBoolSpellings) {
  for (const char* text : {"1", "t", "T", "TRUE", "true", "True"}) {
    SCOPED_TRACE(text);
    bool value = false;
    ASSERT_TRUE(ParseGoBool(text, &value));
    EXPECT_TRUE(value);
  }
  for (const char* text : {"0", "f", "F", "FALSE", "false", "False"}) {
    SCOPED_TRACE(text);
    bool value = true;
    ASSERT_TRUE(ParseGoBool(text, &value));
    EXPECT_FALSE(value);
  }
}

TEST(ParseGoBoolTest, RejectsOtherSpellingsAndLeavesOutputUnchanged) {
  for (const char* text : {"", "yes", "on", "tRUE", "TRue", " true", "2", "y"}) {
    SCOPED_TRACE(text);
    bool value = true;
    EXPECT_FALSE(ParseGoBool(text, &value));
    EXPECT_TRUE(value);
  }
}

TEST(ParseInt64Test, ParsesWholeDecimalStringsWithOptionalSign) {
  struct Case {
    const char* text;
    long long want;
  };
  for (const Case& c : std::vector<Case>{{"0", 0},
                                         {"42", 42},
                                         {"+7", 7},
                                         {"-3", -3},
                                         {"9223372036854775807", 9223372036854775807LL}}) {
    SCOPED_TRACE(c.text);
    long long v = 0;
    ASSERT_TRUE(ParseInt64(c.text, &v));
    EXPECT_EQ(v, c.want);
  }
}

TEST(ParseInt64Test, RejectsPartialOrMalformedNumbers) {
  for (const char* text :
       {"", "+", "-", "+-5", "++5", "1.5", "12a", " 1", "1 ", "0x10", "9223372036854775808"}) {
    SCOPED_TRACE(text);
    long long v = 0;
    EXPECT_FALSE(ParseInt64(text, &v));
  }
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

TEST(Base64, EncodesWithPaddingAndRoundTrips) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  std::string back;
  ASSERT_TRUE(Base64Decode(Base64Encode(all), &back));
  EXPECT_EQ(back, all);
}

TEST(Base64, RejectsInvalidText) {
  std::string out;
  EXPECT_FALSE(Base64Decode("Zg=", &out));
  EXPECT_FALSE(Base64Decode("Z===", &out));
  EXPECT_FALSE(Base64Decode("Zm9v!A==", &out));
  EXPECT_FALSE(Base64Decode("Zg==Zg==", &out));
  ASSERT_TRUE(Base64Decode("Zm9v\nYmFy", &out));
  EXPECT_EQ(out, "foobar");
}

TEST(HtmlEscape, EscapesMarkupAndQuotes) {
  EXPECT_EQ(HtmlEscape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
  EXPECT_EQ(HtmlEscape("plain"), "plain");
}

}  // namespace
TEST(StableHash, IsPinnedAcrossBuildsAndRuns) {
  // The scheduler fills equally good nodes in this order (NodeState::tie_order): a change here
  // reshuffles where every cluster puts its pods, so it must be deliberate.
  EXPECT_EQ(StableHash("n1"), 0x4632982109e9dbd4ULL);
  EXPECT_EQ(StableHash("node-a"), 0x1f5ed2da5dd8d703ULL);
  EXPECT_NE(StableHash("n1"), StableHash("n2"));
}

}  // namespace tessera
