#include "core/sched/admission.h"

#include <algorithm>

#include "core/model/quantity.h"

namespace tessera::sched {
namespace {

bool Has(const model::Container& c, const std::string& name) {
  return c.limits.count(name) > 0 || c.requests.count(name) > 0;
}

const std::string* Get(const model::Container& c, const std::string& name) {
  if (auto it = c.limits.find(name); it != c.limits.end()) return &it->second;
  if (auto it = c.requests.find(name); it != c.requests.end()) return &it->second;
  return nullptr;
}

}  // namespace

Result<AdmissionOutcome> ApplyAdmissionDefaults(const model::Pod& pod,
                                                const config::NvidiaConfig& config) {
  AdmissionOutcome out;
  out.pod = pod;
  bool privileged = false;
  std::string privileged_name;
  auto visit = [&](model::Container& c, bool init, size_t index) -> Status {
    if (const std::string* pct = Get(c, config.resource_memory_percentage_name)) {
      auto q = model::Quantity::Parse(*pct);
      auto v = q.ok() ? q->ToInt64() : std::nullopt;
      if (!v || *v < 0 || *v > 100) {
        return Error{"invalid " + config.resource_memory_percentage_name + " value " + *pct +
                     " in container " + c.name + ": must be an integer between 0 and 100"};
      }
    }
    bool has = false;
    if (c.limits.count(config.resource_count_name) > 0) {
      has = true;
    } else if ((c.limits.count(config.resource_core_name) > 0 ||
                c.limits.count(config.resource_memory_name) > 0 ||
                c.limits.count(config.resource_memory_percentage_name) > 0) &&
               config.default_gpu_num > 0) {
      c.limits[config.resource_count_name] = std::to_string(config.default_gpu_num);
      out.changes.push_back(
          {init, index, config.resource_count_name, std::to_string(config.default_gpu_num)});
      has = true;
    }
    if (Has(c, config.resource_count_name) && !Has(c, config.resource_core_name)) {
      // HAMi's defaultExclusiveCoreIfNeeded: a percentage decides alone (exclusive iff it is
      // 100, by value); without one, exclusive when no memory is (or can be) asked for.
      bool exclusive = false;
      if (const std::string* pct = Get(c, config.resource_memory_percentage_name)) {
        auto q = model::Quantity::Parse(*pct);
        exclusive = q.ok() && q->ToInt64() == 100;
      } else {
        exclusive = config.resource_memory_name.empty() || !Has(c, config.resource_memory_name);
      }
      if (exclusive) {
        c.limits[config.resource_core_name] = "100";
        out.changes.push_back({init, index, config.resource_core_name, "100"});
        has = true;
      }
    }
    if (c.privileged && !privileged) {
      privileged = true;
      privileged_name = c.name;
    }
    out.has_gpu = out.has_gpu || has;
    return Status::Ok();
  };
  for (size_t i = 0; i < out.pod.init_containers.size(); ++i) {
    if (auto s = visit(out.pod.init_containers[i], true, i); !s) return Error{s.message()};
  }
  for (size_t i = 0; i < out.pod.containers.size(); ++i) {
    if (auto s = visit(out.pod.containers[i], false, i); !s) return Error{s.message()};
  }
  if (privileged && out.has_gpu) return Error{"container " + privileged_name + " is privileged"};
  return out;
}

state::QuotaUse AdmissionQuotaUse(const PodRequest& request) {
  state::QuotaUse app;
  state::QuotaUse init;
  for (size_t i = 0; i < request.slots.size(); ++i) {
    const ContainerRequest& k = request.slots[i];
    const int64_t mem = static_cast<int64_t>(k.mem_mib) * k.nums;
    const int64_t cores = static_cast<int64_t>(k.cores) * k.nums;
    if (request.IsInit(i)) {
      init.mem = std::max(init.mem, mem);
      init.cores = std::max(init.cores, cores);
    } else {
      app.mem += mem;
      app.cores += cores;
    }
  }
  return {std::max(app.mem, init.mem), std::max(app.cores, init.cores)};
}

}  // namespace tessera::sched
