#pragma once

#include <memory>
#include <string_view>

#include "core/common/result.h"
#include "core/extender/extender_protocol.h"

namespace tessera::extender {

// Decodes ExtenderArgs as DecodeExtenderArgs does, faster for the body kube-scheduler sends with
// nodeCacheCapable: the pod plus thousands of node names. The names are read on demand
// (simdjson) without building a JSON tree, and only the pod is parsed into one (nlohmann, as
// before). Any other body (node objects, other keys or keys in another case, duplicate keys,
// malformed input) goes to DecodeExtenderArgs, so the result and the error message are the same
// for every body (fuzz/fuzz_extender.cc compares the two).
//
// The decoder keeps its parser's buffers from one body to the next: one per thread.
class ExtenderArgsDecoder {
 public:
  ExtenderArgsDecoder();
  ~ExtenderArgsDecoder();
  ExtenderArgsDecoder(const ExtenderArgsDecoder&) = delete;
  ExtenderArgsDecoder& operator=(const ExtenderArgsDecoder&) = delete;

  Result<ExtenderArgs> Decode(std::string_view body);
  // Whether the last Decode took the on-demand path (for tests).
  bool last_was_on_demand() const { return last_on_demand_; }

 private:
  struct Parser;
  std::unique_ptr<Parser> parser_;
  bool last_on_demand_ = false;
};

}  // namespace tessera::extender
