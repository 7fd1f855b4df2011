#pragma once

#include <map>
#include <string>

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
};

}  // namespace tessera::kube
