#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/common/result.h"

// Helpers for reading JSON the way Go's encoding/json does: keys match case-insensitively and
// unknown keys are ignored. Every error names the field it is about.
namespace tessera::codec {

using Json = nlohmann::json;

// The member of `obj` whose key equals `key` ignoring case (exact match preferred); nullptr if
// absent or if `obj` is not an object.
const Json* FindKey(const Json& obj, std::string_view key);

// Typed reads: an absent key leaves *out unchanged and succeeds; a present key of the wrong type
// (or out of range) fails with "<where>.<key>: ...". JSON null counts as absent, as in Go.
Status ReadString(const Json& obj, std::string_view key, const std::string& where,
                  std::string* out);
Status ReadBool(const Json& obj, std::string_view key, const std::string& where, bool* out);
Status ReadInt(const Json& obj, std::string_view key, const std::string& where, long long min,
               long long max, long long* out);

template <class T>
Status ReadIntAs(const Json& obj, std::string_view key, const std::string& where, long long min,
                 long long max, T* out) {
  long long v = static_cast<long long>(*out);
  Status s = ReadInt(obj, key, where, min, max, &v);
  if (s.ok()) *out = static_cast<T>(v);
  return s;
}

// Parses text as JSON; the error names `what`.
Result<Json> ParseJson(std::string_view text, const std::string& what);

}  // namespace tessera::codec
