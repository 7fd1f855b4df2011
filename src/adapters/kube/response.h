#pragma once

#include <map>
#include <string>

#include "core/common/result.h"

namespace tessera::kube {

// One HTTP exchange with the API server, as the caller sees it.
struct Response {
  long status = 0;  // HTTP status; 0 when the request never got an answer
  std::string body;
  std::string transport_error;                 // curl's message; set whenever the transfer failed
  std::map<std::string, std::string> headers;  // lower-case names
  bool cancelled = false;  // ended by the caller's should_stop, not by the server or network

  bool ok() const { return status >= 200 && status < 300; }
  // "HTTP 409: <Status.message>" or the transport error, for error messages.
  std::string Describe() const;
  // What kind of failure a response that is not ok() is: 409 conflict, 404 not found, no answer,
  // 429 or 5xx unavailable, other 4xx invalid input.
  ErrorCode Code() const;
  // An Error for a response that is not ok(): `what` (the request, naming the object), then
  // Describe(), with Code().
  Error ToError(const std::string& what) const { return Error{what + ": " + Describe(), Code()}; }
};

}  // namespace tessera::kube
