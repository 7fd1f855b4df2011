#include "core/extender/extender_args_decoder.h"

#include <simdjson.h>

#include <algorithm>
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

// What the on-demand reader made of a body.
enum class OnDemand {
  kDecoded,
  kGeneral,  // the general decoder must judge it (another shape, or malformed)
  kTooMany,  // more node names than allowed: refused without reading the rest
};

// The names, or nullopt for null; kGeneral where the general decoder must judge the list (not
// strings, not a list). `expected`: how many to make room for (the previous body's count: the
// list rarely changes).
OnDemand ReadNames(od::value value, size_t expected, size_t max_names,
                   std::optional<std::vector<std::string>>* out) {
  bool null = false;
  if (value.is_null().get(null) != simdjson::SUCCESS) return OnDemand::kGeneral;
  if (null) {
    out->reset();
    return OnDemand::kDecoded;
  }
  od::array list;
  if (value.get_array().get(list) != simdjson::SUCCESS) return OnDemand::kGeneral;
  std::vector<std::string> names;
  names.reserve(std::min(expected, max_names));
  for (auto element : list) {
    std::string_view name;
    if (element.get_string().get(name) != simdjson::SUCCESS) return OnDemand::kGeneral;
    if (names.size() == max_names) return OnDemand::kTooMany;
    names.emplace_back(name);
  }
  *out = std::move(names);
  return OnDemand::kDecoded;
}

// ExtenderArgs from `body` into `out`; kGeneral where DecodeExtenderArgs must decide.
OnDemand DecodeOnDemand(od::parser& parser, simdjson::padded_string_view body,
                        size_t expected_names, size_t max_names, ExtenderArgs* out) {
  od::document doc;
  if (parser.iterate(body).get(doc) != simdjson::SUCCESS) return OnDemand::kGeneral;
  od::object root;
  if (doc.get_object().get(root) != simdjson::SUCCESS) return OnDemand::kGeneral;
  ExtenderArgs& args = *out;
  bool have_pod = false;
  bool have_names = false;
  for (auto field : root) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return OnDemand::kGeneral;
    od::value value;
    if (field.value().get(value) != simdjson::SUCCESS) return OnDemand::kGeneral;
    if (key == "Pod") {
      od::object pod;
      std::string_view raw;
      if (have_pod || value.get_object().get(pod) != simdjson::SUCCESS ||
          pod.raw_json().get(raw) != simdjson::SUCCESS) {
        return OnDemand::kGeneral;
      }
      // Too deep to copy or print safely: the general decoder refuses it with a message.
      if (codec::JsonNestingDepth(raw, codec::kMaxJsonNesting) > codec::kMaxJsonNesting) {
        return OnDemand::kGeneral;
      }
      args.pod = codec::Json::parse(raw, nullptr, /*allow_exceptions=*/false);
      if (args.pod.is_discarded()) return OnDemand::kGeneral;
      have_pod = true;
    } else if (key == "NodeNames") {
      if (have_names) return OnDemand::kGeneral;
      const OnDemand names = ReadNames(value, expected_names, max_names, &args.node_names);
      if (names != OnDemand::kDecoded) return names;
      have_names = true;
    } else if (key == "Nodes") {
      bool null = false;
      if (value.is_null().get(null) != simdjson::SUCCESS || !null) {
        return OnDemand::kGeneral;  // node objects: the general decoder
      }
    } else {
      // Another key (kube-scheduler sends none) or one in another case (Go's keys are
      // case-insensitive): the general decoder's rules. Values skipped on demand are not fully
      // validated, so a body with them must not be accepted here.
      return OnDemand::kGeneral;
    }
  }
  if (!have_pod) return OnDemand::kGeneral;
  // Trailing content after the object is invalid JSON: the general decoder says so.
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) return OnDemand::kGeneral;
  return OnDemand::kDecoded;
}

}  // namespace

ExtenderArgsDecoder::ExtenderArgsDecoder() : parser_(std::make_unique<Parser>()) {}
ExtenderArgsDecoder::~ExtenderArgsDecoder() = default;

size_t ExtenderArgsDecoder::retained_capacity() const {
  return std::max(parser_->body.capacity(), parser_->parser.capacity());
}

void ExtenderArgsDecoder::ReleaseIfOversized() {
  if (retained_capacity() <= kMaxRetainedCapacity) return;
  // One large body must not pin its buffers (the parser's are several times its size) for the
  // thread's lifetime: the next request allocates what it needs.
  std::string().swap(parser_->body);
  parser_->parser = od::parser{};
  parser_->names = 0;
}

// GCC 12 sees the empty std::optional<std::vector<Json>> `nodes` as possibly uninitialised when
// ExtenderArgs is moved into the Result (a known false positive of -Wmaybe-uninitialized).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
Result<ExtenderArgs> ExtenderArgsDecoder::Decode(std::string_view body, size_t max_nodes) {
  std::string& padded = parser_->body;
  padded.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  padded.assign(body);
  ExtenderArgs args;
  const OnDemand read = DecodeOnDemand(
      parser_->parser, simdjson::padded_string_view(padded.data(), body.size(), padded.capacity()),
      parser_->names, max_nodes, &args);
  last_on_demand_ = read == OnDemand::kDecoded;
  if (read == OnDemand::kDecoded) parser_->names = args.node_names ? args.node_names->size() : 0;
  ReleaseIfOversized();
  if (read == OnDemand::kDecoded) return args;
  if (read == OnDemand::kTooMany) return TooManyNodes("NodeNames", max_nodes);
  return DecodeExtenderArgs(body, max_nodes);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace tessera::extender
