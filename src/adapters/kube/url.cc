#include "adapters/kube/url.h"

#include <cctype>

namespace tessera::kube {

Result<ServerUrl> ParseServerUrl(const std::string& server) {
  ServerUrl url;
  const size_t scheme_end = server.find("://");
  if (scheme_end == std::string::npos) return Error{"server \"" + server + "\": no scheme"};
  url.scheme = server.substr(0, scheme_end);
  if (url.scheme != "https" && url.scheme != "http") {
    return Error{"server \"" + server + "\": scheme must be http or https"};
  }
  const size_t authority_start = scheme_end + 3;
  const size_t path_start = server.find('/', authority_start);
  const std::string authority = server.substr(authority_start, path_start - authority_start);
  if (path_start != std::string::npos) url.path_prefix = server.substr(path_start);
  while (!url.path_prefix.empty() && url.path_prefix.back() == '/') url.path_prefix.pop_back();

  size_t port_colon = std::string::npos;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) return Error{"server \"" + server + "\": unclosed '['"};
    url.host = authority.substr(0, close + 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return Error{"server \"" + server + "\": bad host"};
      port_colon = close + 1;
    }
  } else {
    port_colon = authority.rfind(':');
    url.host = authority.substr(0, port_colon);
  }
  if (url.host.empty()) return Error{"server \"" + server + "\": no host"};
  url.port = port_colon == std::string::npos ? (url.scheme == "https" ? "443" : "80")
                                             : authority.substr(port_colon + 1);
  if (url.port.empty()) return Error{"server \"" + server + "\": empty port"};
  for (char c : url.port) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) {
      return Error{"server \"" + server + "\": bad port"};
    }
  }
  return url;
}

std::string EscapeUrlComponent(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0x0F]);
    }
  }
  return out;
}

}  // namespace tessera::kube
