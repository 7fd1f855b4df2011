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
// A string, or an integer written as its decimal text (YAML's `libCudaLogLevel: 1` is a number
// once converted to JSON; HAMi's YAML decoder takes it as the string "1").
Status ReadStringOrInteger(const Json& obj, std::string_view key, const std::string& where,
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

// How deep arrays and objects may nest in JSON that tessera reads. nlohmann-json copies, compares
// and prints values recursively, so a deeper value from a client would overflow the stack; no
// Kubernetes object or HAMi annotation comes near this.
inline constexpr int kMaxJsonNesting = 128;

// The deepest nesting of arrays and objects in `text`, found by scanning the bytes (strings and
// their escapes skipped, nothing parsed or allocated); it stops as soon as it passes `limit` and
// then returns limit + 1.
int JsonNestingDepth(std::string_view text, int limit);

// A value from a client, described for an error message without printing all of it: a scalar's
// JSON text (cut to 40 characters), [] or {}, or "an array of N items" / "an object of N keys".
// Never recursive, so it is safe on any value.
std::string DescribeJsonValue(const Json& v);

// Parses text as JSON; the error names `what`. Text nested deeper than kMaxJsonNesting is
// refused before parsing.
Result<Json> ParseJson(std::string_view text, const std::string& what);

}  // namespace tessera::codec
