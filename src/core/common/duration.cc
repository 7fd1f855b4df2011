#include "core/common/duration.h"

#include <cctype>
#include <cmath>
#include <string>

namespace tessera {

Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  const std::string quoted = "duration \"" + std::string(text) + "\"";
  if (text.empty()) return Error{quoted + ": empty"};
  double total_ms = 0;
  size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
      ++i;
    }
    if (start == i) return Error{quoted + ": expected a number at position " + std::to_string(i)};
    double value = 0;
    try {
      size_t used = 0;
      value = std::stod(std::string(text.substr(start, i - start)), &used);
      if (used != i - start) return Error{quoted + ": bad number"};
    } catch (const std::exception&) {
      return Error{quoted + ": bad number"};
    }
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit.empty()) {
      if (any || i != text.size()) return Error{quoted + ": missing unit"};
      scale = 1000;  // a bare number: seconds
    } else if (unit == "h") {
      scale = 3600e3;
    } else if (unit == "m") {
      scale = 60e3;
    } else if (unit == "s") {
      scale = 1e3;
    } else if (unit == "ms") {
      scale = 1;
    } else {
      return Error{quoted + ": unknown unit \"" + std::string(unit) + "\" (use h, m, s or ms)"};
    }
    total_ms += value * scale;
    any = true;
  }
  if (!std::isfinite(total_ms) || total_ms > 1e15) return Error{quoted + ": too large"};
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(total_ms)));
}

}  // namespace tessera
