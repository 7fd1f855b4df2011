#include "core/codec/json_util.h"

#include <cmath>

#include "core/common/strings.h"

namespace tessera::codec {

const Json* FindKey(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto exact = obj.find(std::string(key));
  if (exact != obj.end()) return &*exact;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (EqualsIgnoreCase(it.key(), key)) return &it.value();
  }
  return nullptr;
}

int JsonNestingDepth(std::string_view text, int limit) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > deepest) {
          deepest = depth;
          if (deepest > limit) return limit + 1;
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return deepest;
}

std::string DescribeJsonValue(const Json& v) {
  if (v.is_array()) return v.empty() ? "[]" : "an array of " + std::to_string(v.size()) + " items";
  if (v.is_object()) return v.empty() ? "{}" : "an object of " + std::to_string(v.size()) + " keys";
  constexpr size_t kShown = 40;
  std::string text = v.dump();  // a scalar: no recursion
  if (text.size() <= kShown) return text;
  // Cut between characters, not inside one: the message is itself written out as JSON.
  size_t cut = kShown;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "…";
}

Status ReadString(const Json& obj, std::string_view key, const std::string& where,
                  std::string* out) {
  const Json* v = FindKey(obj, key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_string()) {
    return Error{where + "." + std::string(key) + ": expected a string, got " +
                 DescribeJsonValue(*v)};
  }
  *out = v->get<std::string>();
  return Status::Ok();
}

Status ReadStringOrInteger(const Json& obj, std::string_view key, const std::string& where,
                           std::string* out) {
  const Json* v = FindKey(obj, key);
  if (v != nullptr && v->is_number_integer()) {
    *out = std::to_string(v->get<long long>());
    return Status::Ok();
  }
  return ReadString(obj, key, where, out);
}

Status ReadBool(const Json& obj, std::string_view key, const std::string& where, bool* out) {
  const Json* v = FindKey(obj, key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_boolean()) {
    return Error{where + "." + std::string(key) + ": expected true or false, got " +
                 DescribeJsonValue(*v)};
  }
  *out = v->get<bool>();
  return Status::Ok();
}

Status ReadInt(const Json& obj, std::string_view key, const std::string& where, long long min,
               long long max, long long* out) {
  const Json* v = FindKey(obj, key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  std::string field = where + "." + std::string(key);
  long long value = 0;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() &&
        v->get<unsigned long long>() > static_cast<unsigned long long>(max)) {
      return Error{field + ": " + DescribeJsonValue(*v) + " is out of range [" +
                   std::to_string(min) + ", " + std::to_string(max) + "]"};
    }
    value = v->get<long long>();
  } else if (v->is_number_float()) {
    double d = v->get<double>();
    if (!std::isfinite(d) || std::floor(d) != d || std::fabs(d) > 9e15) {
      return Error{field + ": expected a whole number, got " + DescribeJsonValue(*v)};
    }
    value = static_cast<long long>(d);
  } else {
    return Error{field + ": expected a number, got " + DescribeJsonValue(*v)};
  }
  if (value < min || value > max) {
    return Error{field + ": " + std::to_string(value) + " is out of range [" + std::to_string(min) +
                 ", " + std::to_string(max) + "]"};
  }
  *out = value;
  return Status::Ok();
}

Result<Json> ParseJson(std::string_view text, const std::string& what) {
  if (JsonNestingDepth(text, kMaxJsonNesting) > kMaxJsonNesting) {
    return Error{what + ": JSON nested deeper than " + std::to_string(kMaxJsonNesting) + " levels"};
  }
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    std::string snippet(text.substr(0, 80));
    return Error{what + ": invalid JSON: \"" + snippet + (text.size() > 80 ? "…" : "") + "\""};
  }
  return j;
}

}  // namespace tessera::codec
