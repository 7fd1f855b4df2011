#include "sim/replay/report_kit.h"

#include <array>

#include "core/common/strings.h"
#include "sim/replay/seed_stats.h"

namespace tessera::sim::replay {
namespace {

constexpr std::array<const char*, 8> kPalette = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                                 "#8c564b", "#17becf", "#e377c2", "#7f7f7f"};

std::string Coord(double v) { return FormatFixed(v, 1); }

void AppendFields(std::string& text, const std::vector<std::string>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) text += ',';
    text += fields[i];
  }
  text += '\n';
}

}  // namespace

const char* SeriesColor(size_t i) { return kPalette[i % kPalette.size()]; }

HtmlPage::HtmlPage(std::string_view title) {
  out_ << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << HtmlEscape(title)
       << "</title>\n<style>body{font-family:sans-serif;margin:24px;color:#222}"
       << "table{border-collapse:collapse;margin:8px 0 24px}td,th{border:1px solid #ccc;"
       << "padding:3px 7px;text-align:right}th{background:#f4f4f4}.label{text-align:left}"
       << ".sd{color:#888;font-size:85%}.best{background:#e6f4e6;font-weight:bold}"
       << ".note{color:#666;font-size:90%}</style></head><body>\n<h1>" << HtmlEscape(title)
       << "</h1>\n";
}

HtmlPage& HtmlPage::Heading(std::string_view text) {
  out_ << "<h2>" << HtmlEscape(text) << "</h2>\n";
  return *this;
}

HtmlPage& HtmlPage::Note(std::string_view text) {
  out_ << "<p class=\"note\">" << HtmlEscape(text) << "</p>\n";
  return *this;
}

HtmlPage& HtmlPage::Html(std::string_view html) {
  out_ << html;
  return *this;
}

std::string HtmlPage::Finish() {
  out_ << "</body></html>\n";
  return out_.str();
}

SvgCanvas::SvgCanvas(double width, double height, int font_size) {
  out_ << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << Coord(width) << "\" height=\""
       << Coord(height) << "\" font-family=\"sans-serif\" font-size=\"" << font_size << "\">\n";
}

void SvgCanvas::Title(double x, double y, std::string_view text) {
  out_ << "<text x=\"" << Coord(x) << "\" y=\"" << Coord(y) << "\" font-weight=\"bold\">"
       << HtmlEscape(text) << "</text>\n";
}

void SvgCanvas::Text(double x, double y, std::string_view text, std::string_view anchor) {
  out_ << "<text x=\"" << Coord(x) << "\" y=\"" << Coord(y) << "\"";
  if (anchor != "start") out_ << " text-anchor=\"" << anchor << "\"";
  out_ << ">" << HtmlEscape(text) << "</text>\n";
}

void SvgCanvas::Line(double x1, double y1, double x2, double y2, std::string_view stroke,
                     std::string_view extra) {
  out_ << "<line x1=\"" << Coord(x1) << "\" x2=\"" << Coord(x2) << "\" y1=\"" << Coord(y1)
       << "\" y2=\"" << Coord(y2) << "\" stroke=\"" << stroke << "\"" << extra << "/>\n";
}

void SvgCanvas::Rect(double x, double y, double width, double height, std::string_view fill,
                     std::string_view stroke, std::string_view tooltip) {
  out_ << "<rect x=\"" << Coord(x) << "\" y=\"" << Coord(y) << "\" width=\"" << Coord(width)
       << "\" height=\"" << Coord(height) << "\" fill=\"" << fill << "\"";
  if (stroke != "none") out_ << " stroke=\"" << stroke << "\"";
  if (tooltip.empty()) {
    out_ << "/>\n";
  } else {
    out_ << "><title>" << HtmlEscape(tooltip) << "</title></rect>\n";
  }
}

void SvgCanvas::Polyline(const std::vector<std::pair<double, double>>& points,
                         std::string_view stroke, double stroke_width, bool dashed) {
  out_ << "<polyline fill=\"none\" stroke=\"" << stroke << "\" stroke-width=\""
       << Coord(stroke_width) << "\"" << (dashed ? kDashed : "") << " points=\"";
  for (const auto& [x, y] : points) out_ << Coord(x) << "," << Coord(y) << " ";
  out_ << "\"/>\n";
}

std::string SvgCanvas::Finish() {
  out_ << "</svg>\n";
  return out_.str();
}

CsvWriter::CsvWriter(const std::vector<std::string>& header) { AppendFields(text_, header); }

void CsvWriter::Row(const std::vector<std::string>& fields) { AppendFields(text_, fields); }

}  // namespace tessera::sim::replay
