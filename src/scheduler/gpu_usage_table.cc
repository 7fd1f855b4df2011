#include "scheduler/gpu_usage_table.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

namespace tessera::scheduler {

void GpuUsageTable::Update(const std::string& node, const std::string* annotation) {
  if (annotation == nullptr) {
    Remove(node);
    return;
  }
  std::lock_guard lock(mu_);
  auto it = nodes_.find(node);
  if (it != nodes_.end() && it->second.raw == *annotation) return;  // unchanged: nothing to do
  Entry entry;
  entry.raw = *annotation;
  auto decoded = codec::DecodeGpuUsage(*annotation);
  if (decoded.ok()) {
    entry.usage = std::make_shared<const codec::NodeGpuUsage>(std::move(decoded.value()));
  } else {
    ++malformed_;
    spdlog::warn("node {}: ignoring its GPU usage: {}", node, decoded.error().message);
  }
  const bool was_shown = it != nodes_.end() && it->second.usage != nullptr;
  const bool shown = entry.usage != nullptr;
  nodes_[node] = std::move(entry);
  if (was_shown || shown) ++version_;
}

void GpuUsageTable::Remove(const std::string& node) {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  if (it->second.usage != nullptr) ++version_;
  nodes_.erase(it);
}

namespace {

nlohmann::json Value(const std::optional<uint32_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
nlohmann::json Value(const std::optional<uint64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

GpuUsageTable::Json GpuUsageTable::ToJson() const {
  std::lock_guard lock(mu_);
  if (json_ == nullptr || json_version_ != version_) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [name, entry] : nodes_) {
      if (entry.usage == nullptr) continue;
      nlohmann::json gpus = nlohmann::json::array();
      for (const auto& g : entry.usage->gpus) {
        nlohmann::json mig = nlohmann::json::array();
        for (const auto& m : g.mig) {
          mig.push_back(
              {m.start, Value(m.usage.utilization_percent), Value(m.usage.memory_used_mib)});
        }
        gpus.push_back({g.uuid, Value(g.usage.utilization_percent), Value(g.usage.memory_used_mib),
                        std::move(mig)});
      }
      out[name] = {entry.usage->time_s, std::move(gpus)};
    }
    json_ = std::make_shared<const std::string>(out.dump());
    json_version_ = version_;
  }
  return Json{json_, version_};
}

size_t GpuUsageTable::size() const {
  std::lock_guard lock(mu_);
  return nodes_.size();
}

uint64_t GpuUsageTable::version() const {
  std::lock_guard lock(mu_);
  return version_;
}

uint64_t GpuUsageTable::malformed() const {
  std::lock_guard lock(mu_);
  return malformed_;
}

}  // namespace tessera::scheduler
