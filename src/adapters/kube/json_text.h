#pragma once

#include <string>

#include "core/codec/json_util.h"

namespace tessera::kube {

using codec::Json;

// Serialises for a request body. Invalid UTF-8 in caller-supplied strings is replaced rather
// than thrown about (nlohmann::json::dump throws by default).
std::string ToJsonText(const Json& value);

// A string member at a path of object keys; "" when absent or not a string.
std::string StringAt(const Json& value, std::initializer_list<const char*> keys);

}  // namespace tessera::kube
