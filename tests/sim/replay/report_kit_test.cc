#include "sim/replay/report_kit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::sim::replay {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(CsvWriter, WritesTheHeaderThenOneLinePerRow) {
  CsvWriter csv({"a", "b"});
  csv.Row({"1", "x"});
  csv.Row({"2", ""});
  EXPECT_EQ(csv.text(), "a,b\n1,x\n2,\n");
}

TEST(HtmlPage, OneShellWithTheSharedStyleAndEscapedText) {
  HtmlPage page("a <b> & c");
  page.Heading("h<2>").Note("n&m").Html("<p>raw</p>");
  const std::string html = page.Finish();
  EXPECT_THAT(html, StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(html, HasSubstr("<title>a &lt;b&gt; &amp; c</title>"));
  EXPECT_THAT(html, HasSubstr("<h1>a &lt;b&gt; &amp; c</h1>"));
  EXPECT_THAT(html, HasSubstr(".label{text-align:left}"));
  EXPECT_THAT(html, HasSubstr("<h2>h&lt;2&gt;</h2>"));
  EXPECT_THAT(html, HasSubstr("<p class=\"note\">n&amp;m</p>"));
  EXPECT_THAT(html, HasSubstr("<p>raw</p>"));
  EXPECT_THAT(html, EndsWith("</body></html>\n"));
}

TEST(SvgCanvas, CoordinatesWithOneDecimalAndEscapedText) {
  SvgCanvas svg(100, 50.25, 11);
  svg.Title(1, 2, "t<");
  svg.Text(3, 4.04, "x&y", "end");
  svg.Line(0, 1.26, 2, 3, "#eee", kDashed);
  svg.Rect(1, 2, 3, 4, "#f00", "none", "tip>");
  svg.Rect(1, 2, 3, 4, "none", "#888");
  svg.Polyline({{0, 0}, {1.55, 2}}, "#00f", 1.6, false);
  const std::string out = svg.Finish();
  EXPECT_THAT(out, HasSubstr("width=\"100.0\" height=\"50.2\""));
  EXPECT_THAT(out, HasSubstr("font-size=\"11\""));
  EXPECT_THAT(out, HasSubstr("font-weight=\"bold\">t&lt;</text>"));
  EXPECT_THAT(out, HasSubstr("<text x=\"3.0\" y=\"4.0\" text-anchor=\"end\">x&amp;y</text>"));
  EXPECT_THAT(out, HasSubstr("y1=\"1.3\""));
  EXPECT_THAT(out, HasSubstr("stroke-dasharray=\"6 4\""));
  EXPECT_THAT(out, HasSubstr("fill=\"#f00\"><title>tip&gt;</title></rect>"));
  EXPECT_THAT(out, HasSubstr("fill=\"none\" stroke=\"#888\"/>"));
  EXPECT_THAT(out, HasSubstr("points=\"0.0,0.0 1.6,2.0 \""));
  EXPECT_THAT(out, EndsWith("</svg>\n"));
}

TEST(SeriesColor, WrapsAroundThePalette) {
  EXPECT_STREQ(SeriesColor(0), SeriesColor(8));
  EXPECT_STRNE(SeriesColor(0), SeriesColor(1));
}

}  // namespace
}  // namespace tessera::sim::replay
