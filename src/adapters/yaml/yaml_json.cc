#include "adapters/yaml/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

namespace tessera::adapters {
namespace {

size_t SkipDigits(const std::string& s, size_t i) {
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

// YAML 1.2 core schema: [-+]?[0-9]+
bool IsYamlInt(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  size_t end = SkipDigits(s, i);
  return end > i && end == s.size();
}

// YAML 1.2 core schema: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsYamlFloat(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  size_t int_end = SkipDigits(s, i);
  bool digits = int_end > i;
  i = int_end;
  if (i < s.size() && s[i] == '.') {
    size_t frac_end = SkipDigits(s, i + 1);
    digits = digits || frac_end > i + 1;
    i = frac_end;
  }
  if (!digits) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '-' || s[j] == '+')) ++j;
    size_t exp_end = SkipDigits(s, j);
    if (exp_end == j) return false;
    i = exp_end;
  }
  return i == s.size();
}

constexpr size_t kMaxValues = 1000000;
constexpr int kMaxDepth = 200;  // deeper documents are refused rather than risking the stack

// Well-formed UTF-8 (no overlong forms, surrogates or code points above U+10FFFF). JSON strings
// must be UTF-8: nlohmann::json throws type_error 316 when it serialises anything else.
bool ValidUtf8(std::string_view s) {
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = 1;
    uint32_t cp = c;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (s.size() - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

Error InvalidUtf8(const YAML::Node& node) {
  return Error{"line " + std::to_string(node.Mark().line + 1) + ": invalid UTF-8"};
}

Result<codec::Json> Convert(const YAML::Node& node, int depth, size_t* budget) {
  if (depth > kMaxDepth) return Error{"nesting deeper than " + std::to_string(kMaxDepth)};
  // Aliases can make a small file expand exponentially ("billion laughs"): cap the values.
  if (*budget == 0) {
    return Error{"more than " + std::to_string(kMaxValues) + " values (alias expansion?)"};
  }
  --*budget;
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return codec::Json(nullptr);
    case YAML::NodeType::Sequence: {
      codec::Json arr = codec::Json::array();
      for (const auto& item : node) {
        auto v = Convert(item, depth + 1, budget);
        if (!v.ok()) return v;
        arr.push_back(std::move(v.value()));
      }
      return arr;
    }
    case YAML::NodeType::Map: {
      codec::Json obj = codec::Json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          return Error{"line " + std::to_string(kv.first.Mark().line + 1) +
                       ": mapping keys must be scalars"};
        }
        if (!ValidUtf8(kv.first.Scalar())) return InvalidUtf8(kv.first);
        auto v = Convert(kv.second, depth + 1, budget);
        if (!v.ok()) return v;
        obj[kv.first.Scalar()] = std::move(v.value());
      }
      return obj;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (!ValidUtf8(s)) return InvalidUtf8(node);
      if (node.Tag() == "!") return codec::Json(s);  // quoted: always a string
      if (s == "true" || s == "True" || s == "TRUE") return codec::Json(true);
      if (s == "false" || s == "False" || s == "FALSE") return codec::Json(false);
      if (s == "null" || s == "Null" || s == "NULL" || s == "~" || s.empty()) {
        return codec::Json(nullptr);
      }
      if (IsYamlInt(s)) {
        errno = 0;
        long long v = std::strtoll(s.c_str(), nullptr, 10);
        if (errno == 0) return codec::Json(v);
        return codec::Json(s);
      }
      if (IsYamlFloat(s)) return codec::Json(std::strtod(s.c_str(), nullptr));
      return codec::Json(s);
    }
  }
  return codec::Json(nullptr);
}

}  // namespace

Result<codec::Json> ParseYaml(std::string_view text, const std::string& what) {
  try {
    YAML::Node root = YAML::Load(std::string(text));
    size_t budget = kMaxValues;
    auto v = Convert(root, 0, &budget);
    if (!v.ok()) return Error{what + ": " + v.error().message};
    return v;
  } catch (const YAML::Exception& e) {
    return Error{what + ": invalid YAML at line " + std::to_string(e.mark.line + 1) + ", column " +
                 std::to_string(e.mark.column + 1) + ": " + e.msg};
  } catch (const std::exception& e) {
    return Error{what + ": invalid YAML: " + e.what()};
  }
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open: " + std::strerror(errno)};
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Error{path + ": read error"};
  return ss.str();
}

}  // namespace tessera::adapters
