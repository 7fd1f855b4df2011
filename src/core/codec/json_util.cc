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

Status ReadString(const Json& obj, std::string_view key, const std::string& where,
                  std::string* out) {
  const Json* v = FindKey(obj, key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_string()) {
    return Error{where + "." + std::string(key) + ": expected a string, got " + v->dump()};
  }
  *out = v->get<std::string>();
  return Status::Ok();
}

Status ReadBool(const Json& obj, std::string_view key, const std::string& where, bool* out) {
  const Json* v = FindKey(obj, key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_boolean()) {
    return Error{where + "." + std::string(key) + ": expected true or false, got " + v->dump()};
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
      return Error{field + ": " + v->dump() + " is out of range [" + std::to_string(min) + ", " +
                   std::to_string(max) + "]"};
    }
    value = v->get<long long>();
  } else if (v->is_number_float()) {
    double d = v->get<double>();
    if (!std::isfinite(d) || std::floor(d) != d || std::fabs(d) > 9e15) {
      return Error{field + ": expected a whole number, got " + v->dump()};
    }
    value = static_cast<long long>(d);
  } else {
    return Error{field + ": expected a number, got " + v->dump()};
  }
  if (value < min || value > max) {
    return Error{field + ": " + std::to_string(value) + " is out of range [" + std::to_string(min) +
                 ", " + std::to_string(max) + "]"};
  }
  *out = value;
  return Status::Ok();
}

Result<Json> ParseJson(std::string_view text, const std::string& what) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    std::string snippet(text.substr(0, 80));
    return Error{what + ": invalid JSON: \"" + snippet + (text.size() > 80 ? "…" : "") + "\""};
  }
  return j;
}

}  // namespace tessera::codec
