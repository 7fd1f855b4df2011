#include "adapters/yaml/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

namespace tessera::adapters {
namespace {

constexpr int kMaxDepth = 200;  // deeper documents are refused rather than risking the stack

Result<codec::Json> Convert(const YAML::Node& node, int depth) {
  if (depth > kMaxDepth) return Error{"nesting deeper than " + std::to_string(kMaxDepth)};
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return codec::Json(nullptr);
    case YAML::NodeType::Sequence: {
      codec::Json arr = codec::Json::array();
      for (const auto& item : node) {
        auto v = Convert(item, depth + 1);
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
        auto v = Convert(kv.second, depth + 1);
        if (!v.ok()) return v;
        obj[kv.first.Scalar()] = std::move(v.value());
      }
      return obj;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!") return codec::Json(s);  // quoted: always a string
      static const std::regex kInt("[-+]?[0-9]+");
      static const std::regex kFloat("[-+]?([0-9]+\\.[0-9]*|\\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?");
      if (s == "true" || s == "True" || s == "TRUE") return codec::Json(true);
      if (s == "false" || s == "False" || s == "FALSE") return codec::Json(false);
      if (s == "null" || s == "Null" || s == "NULL" || s == "~" || s.empty()) {
        return codec::Json(nullptr);
      }
      if (std::regex_match(s, kInt)) {
        errno = 0;
        long long v = std::strtoll(s.c_str(), nullptr, 10);
        if (errno == 0) return codec::Json(v);
        return codec::Json(s);
      }
      if (std::regex_match(s, kFloat)) return codec::Json(std::strtod(s.c_str(), nullptr));
      return codec::Json(s);
    }
  }
  return codec::Json(nullptr);
}

}  // namespace

Result<codec::Json> ParseYaml(std::string_view text, const std::string& what) {
  try {
    YAML::Node root = YAML::Load(std::string(text));
    auto v = Convert(root, 0);
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
