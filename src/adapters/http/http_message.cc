#include "adapters/http/http_message.h"

namespace tessera::http {

size_t Request::ParamCount(std::string_view name) const {
  size_t count = 0;
  for (const auto& [key, value] : query) count += key == name ? 1 : 0;
  return count;
}

std::string Request::Param(std::string_view name) const {
  for (const auto& [key, value] : query) {
    if (key == name) return value;
  }
  return {};
}

Response Response::Text(int status, std::string body) {
  Response response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

}  // namespace tessera::http
