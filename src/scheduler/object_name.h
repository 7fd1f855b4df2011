#pragma once

#include <string>

#include "core/codec/json_util.h"

namespace tessera::scheduler {

// "namespace/name" of a Kubernetes object, for logs about objects that may not decode.
inline std::string ObjectName(const codec::Json& object) {
  const codec::Json* meta = codec::FindKey(object, "metadata");
  if (meta == nullptr) return "(object without metadata)";
  std::string out;
  if (const codec::Json* ns = codec::FindKey(*meta, "namespace");
      ns != nullptr && ns->is_string()) {
    out = ns->get<std::string>() + "/";
  }
  if (const codec::Json* name = codec::FindKey(*meta, "name");
      name != nullptr && name->is_string()) {
    out += name->get<std::string>();
  }
  return out;
}

}  // namespace tessera::scheduler
