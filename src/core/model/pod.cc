#include "core/model/pod.h"

#include <algorithm>

#include "core/model/quantity.h"

namespace tessera::model {
namespace {

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

}  // namespace tessera::model
