#include "adapters/kube/response.h"

#include <nlohmann/json.hpp>

#include "core/common/strings.h"

namespace tessera::kube {
namespace {

constexpr size_t kMaxBodyInMessage = 300;

// The API server answers errors with a metav1.Status whose `message` says what went wrong.
std::string StatusMessage(const std::string& body) {
  nlohmann::json status = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (status.is_object()) {
    auto message = status.find("message");
    if (message != status.end() && message->is_string()) return message->get<std::string>();
  }
  std::string text = Trim(body);
  if (text.size() > kMaxBodyInMessage) text = text.substr(0, kMaxBodyInMessage) + "...";
  return text;
}

}  // namespace

std::string Response::Describe() const {
  if (cancelled) return "cancelled";
  if (status == 0) return transport_error.empty() ? "no response" : transport_error;
  std::string text = "HTTP " + std::to_string(status);
  if (std::string message = StatusMessage(body); !message.empty()) text += ": " + message;
  if (!transport_error.empty()) text += " (" + transport_error + ")";
  return text;
}

ErrorCode Response::Code() const {
  if (status == 409) return ErrorCode::kConflict;
  if (status == 404 || status == 410) return ErrorCode::kNotFound;
  if (status == 0 || status == 429 || status >= 500) return ErrorCode::kUnavailable;
  return ErrorCode::kInvalidInput;
}

}  // namespace tessera::kube
