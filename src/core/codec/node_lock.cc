#include "core/codec/node_lock.h"

#include "core/common/strings.h"

namespace tessera::codec {

std::optional<NodeLock> ParseNodeLock(std::string_view value) {
  if (value.empty()) return std::nullopt;
  const auto parts = SplitKeepEmpty(value, ',');
  if (parts.size() == 1) return NodeLock{parts[0], "", ""};
  // Namespaces and pod names are DNS labels and subdomains: no commas, never empty.
  if (parts.size() != 3 || parts[1].empty() || parts[2].empty()) return std::nullopt;
  return NodeLock{parts[0], parts[1], parts[2]};
}

std::string FormatNodeLock(std::string_view time, std::string_view ns, std::string_view name) {
  std::string out(time);
  out += ',';
  out += ns;
  out += ',';
  out += name;
  return out;
}

}  // namespace tessera::codec
