#pragma once

#include <chrono>
#include <string_view>

#include "core/common/result.h"

namespace tessera {

// Go's time.ParseDuration for the units flags use (h, m, s, ms), e.g. "90s", "1m30s", "500ms";
// a bare number counts seconds. Negative or malformed values are errors naming the text.
Result<std::chrono::milliseconds> ParseDuration(std::string_view text);

}  // namespace tessera
