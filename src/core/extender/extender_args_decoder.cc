#include "core/extender/extender_args_decoder.h"

#include <simdjson.h>

#include <optional>
#include <string>
#include <vector>

#include "core/codec/json_util.h"

namespace tessera::extender {

namespace od = simdjson::ondemand;

struct ExtenderArgsDecoder::Parser {
  od::parser parser;
  std::string body;  // the body with simdjson's padding, its capacity kept from call to call
  size_t names = 0;  // node names in the previous body
};

namespace {

// The names, or nullopt where the general decoder must judge the list (not strings, not a list).
// `expected`: how many to make room for (the previous body's count: the list rarely changes).
bool ReadNames(od::value value, size_t expected, std::optional<std::vector<std::string>>* out) {
  bool null = false;
  if (value.is_null().get(null) != simdjson::SUCCESS) return false;
  if (null) {
    out->reset();
    return true;
  }
  od::array list;
  if (value.get_array().get(list) != simdjson::SUCCESS) return false;
  std::vector<std::string> names;
  names.reserve(expected);
  for (auto element : list) {
    std::string_view name;
    if (element.get_string().get(name) != simdjson::SUCCESS) return false;
    names.emplace_back(name);
  }
  *out = std::move(names);
  return true;
}

// ExtenderArgs from `body` into `out`; false where DecodeExtenderArgs must decide.
bool DecodeOnDemand(od::parser& parser, simdjson::padded_string_view body, size_t expected_names,
                    ExtenderArgs* out) {
  od::document doc;
  if (parser.iterate(body).get(doc) != simdjson::SUCCESS) return false;
  od::object root;
  if (doc.get_object().get(root) != simdjson::SUCCESS) return false;
  ExtenderArgs& args = *out;
  bool have_pod = false;
  bool have_names = false;
  for (auto field : root) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return false;
    od::value value;
    if (field.value().get(value) != simdjson::SUCCESS) return false;
    if (key == "Pod") {
      od::object pod;
      std::string_view raw;
      if (have_pod || value.get_object().get(pod) != simdjson::SUCCESS ||
          pod.raw_json().get(raw) != simdjson::SUCCESS) {
        return false;
      }
      // Too deep to copy or print safely: the general decoder refuses it with a message.
      if (codec::JsonNestingDepth(raw, codec::kMaxJsonNesting) > codec::kMaxJsonNesting) {
        return false;
      }
      args.pod = codec::Json::parse(raw, nullptr, /*allow_exceptions=*/false);
      if (args.pod.is_discarded()) return false;
      have_pod = true;
    } else if (key == "NodeNames") {
      if (have_names || !ReadNames(value, expected_names, &args.node_names)) return false;
      have_names = true;
    } else if (key == "Nodes") {
      bool null = false;
      if (value.is_null().get(null) != simdjson::SUCCESS || !null) {
        return false;  // node objects: the general decoder
      }
    } else {
      // Another key (kube-scheduler sends none) or one in another case (Go's keys are
      // case-insensitive): the general decoder's rules. Values skipped on demand are not fully
      // validated, so a body with them must not be accepted here.
      return false;
    }
  }
  if (!have_pod) return false;
  // Trailing content after the object is invalid JSON: the general decoder says so.
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) return false;
  return true;
}

}  // namespace

ExtenderArgsDecoder::ExtenderArgsDecoder() : parser_(std::make_unique<Parser>()) {}
ExtenderArgsDecoder::~ExtenderArgsDecoder() = default;

// GCC 12 sees the empty std::optional<std::vector<Json>> `nodes` as possibly uninitialised when
// ExtenderArgs is moved into the Result (a known false positive of -Wmaybe-uninitialized).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
Result<ExtenderArgs> ExtenderArgsDecoder::Decode(std::string_view body) {
  std::string& padded = parser_->body;
  padded.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  padded.assign(body);
  ExtenderArgs args;
  last_on_demand_ = DecodeOnDemand(
      parser_->parser, simdjson::padded_string_view(padded.data(), body.size(), padded.capacity()),
      parser_->names, &args);
  if (last_on_demand_) {
    parser_->names = args.node_names ? args.node_names->size() : 0;
    return args;
  }
  return DecodeExtenderArgs(body);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace tessera::extender
