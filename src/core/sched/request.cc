#include "core/sched/request.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "core/model/quantity.h"

namespace tessera::sched {
namespace {

const std::string* Lookup(const model::Container& c, const std::string& name) {
  if (auto it = c.limits.find(name); it != c.limits.end()) return &it->second;
  if (auto it = c.requests.find(name); it != c.requests.end()) return &it->second;
  return nullptr;
}

Error Unusable(const model::Container& c, const std::string& resource, const std::string& value,
               const std::string& why) {
  return Error{"container " + c.name + ": resource " + resource + ": value \"" + value + "\" " +
               why};
}

// A whole, non-negative number no larger than `max`.
Result<long long> WholeNumber(const model::Container& c, const std::string& resource,
                              const std::string& text, long long max, const std::string& unit) {
  auto q = model::Quantity::Parse(text);
  if (!q.ok()) return Unusable(c, resource, text, "is not a Kubernetes quantity");
  if (q->IsNegative()) return Unusable(c, resource, text, "is negative");
  auto v = q->ToInt64();
  if (!v) return Unusable(c, resource, text, "is not a whole number of " + unit);
  if (*v > max) {
    std::string why = "means " + std::to_string(*v) + " " + unit + ", more than the maximum " +
                      std::to_string(max);
    // "16Gi" is a valid Kubernetes quantity, but this resource counts plain units.
    bool has_suffix = std::any_of(text.begin(), text.end(),
                                  [](unsigned char ch) { return std::isalpha(ch) != 0; });
    if (has_suffix) why += " (" + resource + " counts " + unit + ": write a plain number)";
    return Unusable(c, resource, text, why);
  }
  return *v;
}

}  // namespace

bool PodRequest::HasGpu() const {
  for (const auto& s : slots) {
    if (!s.Empty()) return true;
  }
  return false;
}

Result<ContainerRequest> DeriveContainerRequest(const model::Container& container,
                                                const config::NvidiaConfig& config) {
  ContainerRequest r;
  const std::string* count = Lookup(container, config.resource_count_name);
  const std::string* mem = Lookup(container, config.resource_memory_name);
  const std::string* pct = Lookup(container, config.resource_memory_percentage_name);
  const std::string* cores = Lookup(container, config.resource_core_name);
  constexpr long long kInt32Max = std::numeric_limits<int32_t>::max();

  if (count != nullptr) {
    auto n = WholeNumber(container, config.resource_count_name, *count, kInt32Max, "devices");
    if (!n.ok()) return n.error();
    r.nums = static_cast<int32_t>(*n);
  } else if ((container.limits.count(config.resource_memory_name) > 0 ||
              container.limits.count(config.resource_memory_percentage_name) > 0 ||
              container.limits.count(config.resource_core_name) > 0) &&
             config.default_gpu_num > 0) {
    // The webhook would have set the count to defaultGPUNum (hami-protocol.md 8, step 3.4); it
    // looks at limits only, as ApplyAdmissionDefaults does.
    r.nums = config.default_gpu_num;
  }
  if (r.nums == 0) return ContainerRequest{};

  const int32_t factor = config.memory_factor > 1 ? config.memory_factor : 1;
  if (mem != nullptr) {
    auto v = WholeNumber(container, config.resource_memory_name, *mem, kInt32Max / factor, "MiB");
    if (!v.ok()) return v.error();
    r.mem_mib = static_cast<int32_t>(*v * factor);
  }
  if (pct != nullptr) {
    auto v = WholeNumber(container, config.resource_memory_percentage_name, *pct, 100, "percent");
    if (!v.ok()) return v.error();
    if (*v > 0) r.mem_percent = static_cast<int32_t>(*v);
  }
  if (r.mem_percent == kMemPercentUnset && r.mem_mib == 0) {
    if (config.default_memory != 0) {
      r.mem_mib = config.default_memory;
    } else {
      r.mem_percent = 100;
    }
  }
  r.cores = config.default_cores;
  if (cores != nullptr) {
    auto v = WholeNumber(container, config.resource_core_name, *cores, 100, "percent");
    if (!v.ok()) return v.error();
    r.cores = static_cast<int32_t>(*v);
  }
  return r;
}

Result<PodRequest> DerivePodRequest(const model::Pod& pod, const config::NvidiaConfig& config) {
  PodRequest req;
  req.num_init = static_cast<int>(pod.init_containers.size());
  auto add = [&](const model::Container& c) -> Status {
    auto r = DeriveContainerRequest(c, config);
    if (!r.ok()) return Error{"pod " + pod.Key() + ": " + r.error().message};
    req.names.push_back(c.name);
    req.slots.push_back(r.value());
    return Status::Ok();
  };
  for (const auto& c : pod.init_containers) {
    if (auto s = add(c); !s) return Error{s.message()};
  }
  for (const auto& c : pod.containers) {
    if (auto s = add(c); !s) return Error{s.message()};
  }
  return req;
}

}  // namespace tessera::sched
