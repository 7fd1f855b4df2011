#pragma once

#include <cstddef>
#include <limits>
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
// The decoder keeps its parser's buffers from one body to the next: one per thread. Buffers sized
// for a body above kMaxRetainedCapacity are freed after it, so one large request does not pin
// them for the thread's lifetime.
class ExtenderArgsDecoder {
 public:
  static constexpr size_t kMaxRetainedCapacity = size_t{4} << 20;

  ExtenderArgsDecoder();
  ~ExtenderArgsDecoder();
  ExtenderArgsDecoder(const ExtenderArgsDecoder&) = delete;
  ExtenderArgsDecoder& operator=(const ExtenderArgsDecoder&) = delete;

  // More than `max_nodes` node names or node objects is an error (TooManyNodes); on the
  // on-demand path the names past it are not read.
  Result<ExtenderArgs> Decode(std::string_view body,
                              size_t max_nodes = std::numeric_limits<size_t>::max());
  // Whether the last Decode took the on-demand path (for tests).
  bool last_was_on_demand() const { return last_on_demand_; }
  // The body size the buffers kept for the next Decode are sized for (the parser's own buffers
  // are a few times this).
  size_t retained_capacity() const;

 private:
  void ReleaseIfOversized();

  struct Parser;
  std::unique_ptr<Parser> parser_;
  bool last_on_demand_ = false;
};

}  // namespace tessera::extender
