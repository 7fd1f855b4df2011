#include "core/model/pod.h"

#include <algorithm>

#include "core/model/quantity.h"

namespace tessera::model {
namespace {

bool Dns1123(std::string_view s, size_t max, bool dots) {
  if (s.empty() || s.size() > max) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return alnum(c) || c == '-' || (dots && c == '.'); });
}

int64_t CpuMilli(const std::string& text) {
  auto q = Quantity::Parse(text);
  if (!q.ok() || q->IsNegative()) return 0;
  // Millicores: the quantity times 1000, rounded up as Kubernetes' MilliValue does.
  auto scaled = q->ToMilli();
  return scaled.value_or(0);
}

int64_t ContainerCpu(const Container& c) {
  if (auto it = c.requests.find("cpu"); it != c.requests.end()) return CpuMilli(it->second);
  if (auto it = c.limits.find("cpu"); it != c.limits.end()) return CpuMilli(it->second);
  return 0;
}

}  // namespace

int64_t PodCpuRequestMilli(const Pod& pod) {
  int64_t app = 0;
  for (const auto& c : pod.containers) app += ContainerCpu(c);
  int64_t init = 0;
  for (const auto& c : pod.init_containers) init = std::max(init, ContainerCpu(c));
  return std::max(app, init);
}

std::optional<int64_t> NodeCpuAllocatableMilli(const Node& node) {
  auto it = node.allocatable.find("cpu");
  if (it == node.allocatable.end()) return std::nullopt;
  auto q = Quantity::Parse(it->second);
  if (!q.ok() || q->IsNegative()) return std::nullopt;
  return q->ToMilli();
}

Status ValidatePodKey(std::string_view key) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos || key.find('/', slash + 1) != std::string_view::npos) {
    return Error{"expected NAMESPACE/NAME"};
  }
  if (!Dns1123(key.substr(0, slash), 63, false)) {
    return Error{"namespace is not a DNS-1123 label (lower-case letters, digits, '-')"};
  }
  if (!Dns1123(key.substr(slash + 1), 253, true)) {
    return Error{"name is not a DNS-1123 subdomain (lower-case letters, digits, '-', '.')"};
  }
  return Status::Ok();
}

}  // namespace tessera::model
