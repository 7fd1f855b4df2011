#include "core/state/quota_book.h"

#include <algorithm>
#include <cstdint>

#include "core/model/quantity.h"

namespace tessera::state {

QuotaCollapse::PerGpu& QuotaCollapse::Find(int64_t gpu) {
  for (size_t i = 0; i < inline_used_; ++i) {
    if (inline_[i].gpu == gpu) return inline_[i];
  }
  for (auto& g : more_) {
    if (g.gpu == gpu) return g;
  }
  if (inline_used_ < inline_.size()) {
    inline_[inline_used_] = PerGpu{gpu};
    return inline_[inline_used_++];
  }
  return more_.emplace_back(PerGpu{gpu});
}

void QuotaCollapse::Add(int64_t gpu, bool init, int64_t mem, int64_t cores) {
  PerGpu& g = Find(gpu);
  if (init) {
    g.init_mem = std::max(g.init_mem, mem);
    g.init_cores = std::max(g.init_cores, cores);
  } else {
    g.app_mem += mem;
    g.app_cores += cores;
  }
}

QuotaUse QuotaCollapse::Total() const {
  QuotaUse use;
  auto sum = [&](const PerGpu& g) {
    use.mem += std::max(g.init_mem, g.app_mem);
    use.cores += std::max(g.init_cores, g.app_cores);
  };
  for (size_t i = 0; i < inline_used_; ++i) sum(inline_[i]);
  for (const auto& g : more_) sum(g);
  return use;
}

QuotaUse QuotaUseOf(const codec::PodDevices& devices, int num_init) {
  std::vector<const std::string*> uuids;  // GPU id = position here
  QuotaCollapse collapse;
  for (size_t slot = 0; slot < devices.size(); ++slot) {
    for (const auto& d : devices[slot]) {
      size_t id = 0;
      while (id < uuids.size() && *uuids[id] != d.uuid) ++id;
      if (id == uuids.size()) uuids.push_back(&d.uuid);
      collapse.Add(static_cast<int64_t>(id), static_cast<int>(slot) < num_init, d.used_mem,
                   d.used_cores);
    }
  }
  return collapse.Total();
}

QuotaBook::QuotaBook(const config::NvidiaConfig& config)
    : memory_key_("limits." + config.resource_memory_name),
      core_key_("limits." + config.resource_core_name),
      memory_factor_(std::max<int64_t>(config.memory_factor, 1)) {}

std::vector<std::string> QuotaBook::Upsert(const model::ResourceQuota& quota) {
  std::vector<std::string> problems;
  Limits limits;
  auto read = [&](const std::string& key, std::optional<int64_t>* out) {
    auto it = quota.hard.find(key);
    if (it == quota.hard.end()) return;
    auto q = model::Quantity::Parse(it->second);
    auto v = q.ok() ? q->ToInt64() : std::nullopt;
    if (!v || *v < 0) {
      problems.push_back("ResourceQuota " + quota.Key() + ": spec.hard." + key + ": " + it->second +
                         " is not a whole non-negative number; ignored");
      return;
    }
    *out = *v;
  };
  read(memory_key_, &limits.mem);
  read(core_key_, &limits.cores);
  if (!limits.mem && !limits.cores) {
    Remove(quota.ns, quota.name);
    return problems;
  }
  namespaces_[quota.ns].quotas[quota.name] = limits;
  return problems;
}

void QuotaBook::Remove(const std::string& ns, const std::string& name) {
  auto it = namespaces_.find(ns);
  if (it == namespaces_.end()) return;
  it->second.quotas.erase(name);
  if (it->second.quotas.empty() && it->second.used == QuotaUse{}) namespaces_.erase(it);
}

void QuotaBook::AddUse(const std::string& ns, const QuotaUse& use) {
  if (use == QuotaUse{}) return;
  QuotaUse& used = namespaces_[ns].used;
  used.mem += use.mem;
  used.cores += use.cores;
}

void QuotaBook::RemoveUse(const std::string& ns, const QuotaUse& use) {
  auto it = namespaces_.find(ns);
  if (it == namespaces_.end() || use == QuotaUse{}) return;
  QuotaUse& used = it->second.used;
  used.mem = std::max<int64_t>(0, used.mem - use.mem);
  used.cores = std::max<int64_t>(0, used.cores - use.cores);
  if (it->second.quotas.empty() && used == QuotaUse{}) namespaces_.erase(it);
}

std::optional<QuotaHeadroom> QuotaBook::HeadroomFor(const std::string& ns) const {
  auto it = namespaces_.find(ns);
  if (it == namespaces_.end() || it->second.quotas.empty()) return std::nullopt;
  QuotaHeadroom h;
  for (const auto& [name, l] : it->second.quotas) {
    // Memory limits are in units of the memory resource; usage is in MiB (hami-protocol.md 2).
    if (l.mem) h.mem = std::min(h.mem.value_or(INT64_MAX), MemoryLimitMib(*l.mem));
    if (l.cores) h.cores = std::min(h.cores.value_or(INT64_MAX), *l.cores);
  }
  if (h.mem) *h.mem -= it->second.used.mem;
  if (h.cores) *h.cores -= it->second.used.cores;
  return h;
}

}  // namespace tessera::state
