#pragma once

// What both replays' reports are made of (the FGD trace replay's and the MIG benchmark's): one
// page shell and style, one SVG canvas for their charts, one palette, one CSV writer. Each
// report decides what to show; how it is written lives here.

#include <cstddef>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::sim::replay {

// The i-th color of the series palette (wraps around).
const char* SeriesColor(size_t i);

// A self-contained HTML page with the reports' shared style: tables with right-aligned numbers
// (cells of class "label" left-aligned), ".sd" for a spread, ".best" for the best cell of a row,
// ".note" for remarks.
class HtmlPage {
 public:
  // Opens the page: its title and an <h1> of it.
  explicit HtmlPage(std::string_view title);
  HtmlPage& Heading(std::string_view text);  // <h2>, escaped
  HtmlPage& Note(std::string_view text);     // a remark, escaped
  HtmlPage& Html(std::string_view html);     // written as given
  // Closes the page and returns it.
  std::string Finish();

 private:
  std::ostringstream out_;
};

// An SVG drawing for the reports' charts: coordinates with one decimal, text escaped.
class SvgCanvas {
 public:
  SvgCanvas(double width, double height, int font_size);
  void Title(double x, double y, std::string_view text);  // bold
  // anchor: "start", "middle" or "end".
  void Text(double x, double y, std::string_view text, std::string_view anchor = "start");
  // `extra`: further attributes, e.g. a dash pattern.
  void Line(double x1, double y1, double x2, double y2, std::string_view stroke,
            std::string_view extra = {});
  // `tooltip`: shown on hover when not empty.
  void Rect(double x, double y, double width, double height, std::string_view fill,
            std::string_view stroke = "none", std::string_view tooltip = {});
  void Polyline(const std::vector<std::pair<double, double>>& points, std::string_view stroke,
                double stroke_width, bool dashed);
  std::string Finish();

 private:
  std::ostringstream out_;
};

// The dash pattern of a dashed series, as an SVG attribute.
inline constexpr std::string_view kDashed = " stroke-dasharray=\"6 4\"";

// A CSV text: a header, then rows of as many fields (written as given: the replays' fields
// never hold commas or quotes).
class CsvWriter {
 public:
  explicit CsvWriter(const std::vector<std::string>& header);
  void Row(const std::vector<std::string>& fields);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

}  // namespace tessera::sim::replay
