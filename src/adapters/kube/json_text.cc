#include "adapters/kube/json_text.h"

namespace tessera::kube {

std::string ToJsonText(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string StringAt(const Json& value, std::initializer_list<const char*> keys) {
  const Json* node = &value;
  for (const char* key : keys) {
    auto it = node->find(key);  // end() for non-objects too
    if (it == node->end()) return "";
    node = &*it;
  }
  return node->is_string() ? node->get<std::string>() : "";
}

}  // namespace tessera::kube
