#pragma once

#include <string>
#include <string_view>

#include "core/codec/json_util.h"
#include "core/common/result.h"

namespace tessera::adapters {

// Parses YAML (a superset of JSON) into a JSON value. Plain scalars become booleans, integers,
// floats or null as YAML 1.2's core schema says; quoted scalars stay strings. Errors name `what`
// and the line.
Result<codec::Json> ParseYaml(std::string_view text, const std::string& what);

// Reads a whole file; the error names the path.
Result<std::string> ReadFile(const std::string& path);

}  // namespace tessera::adapters
