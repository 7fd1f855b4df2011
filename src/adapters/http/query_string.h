#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::http {

// Decodes `a=1&b=x%20y+z` into (name, value) pairs in order: %XX and `+` (a space) decoded, an
// item without `=` has an empty value, empty items are skipped. False on a malformed %-escape.
bool DecodeQuery(std::string_view query, std::vector<std::pair<std::string, std::string>>* out);

}  // namespace tessera::http
