#pragma once

#include <string>
#include <string_view>

#include "core/common/result.h"

namespace tessera::kube {

// The parts of an API server URL that TLS server-name overrides need.
struct ServerUrl {
  std::string scheme;       // "https"
  std::string host;         // IPv6 literals keep their brackets: "[::1]"
  std::string port;         // explicit or the scheme's default
  std::string path_prefix;  // "" or "/k8s/clusters/c-1" (no trailing slash)
};
Result<ServerUrl> ParseServerUrl(const std::string& server);

// Percent-encodes everything but RFC 3986 unreserved characters, for one path segment or one
// query value ("spec.nodeName=n1" -> "spec.nodeName%3Dn1").
std::string EscapeUrlComponent(std::string_view text);

}  // namespace tessera::kube
