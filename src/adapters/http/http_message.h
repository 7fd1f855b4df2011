#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::http {

// A request as the handlers see it: read in full, within the listener's limits, with the query
// decoded. No Beast type leaks past the listener, so handlers compile without it.
struct Request {
  std::string method;                                      // "GET", "POST", ...
  std::string path;                                        // the target without its query
  std::vector<std::pair<std::string, std::string>> query;  // decoded, in order
  std::string body;
  std::string authorization;  // the Authorization header, "" when absent
  std::string if_none_match;
  bool peer_is_loopback = false;             // the connection came from this host
  bool client_certificate_verified = false;  // TLS with a client certificate the CA signed

  // How many times `name` is in the query, and its first value ("" when absent).
  size_t ParamCount(std::string_view name) const;
  std::string Param(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // besides Content-Type
  bool close = false;  // close the connection after this answer

  static Response Text(int status, std::string body);
};

}  // namespace tessera::http
