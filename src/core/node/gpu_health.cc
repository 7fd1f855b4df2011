#include "core/node/gpu_health.h"

#include <charconv>

#include "core/common/strings.h"

namespace tessera::node {

namespace {

void ParseList(const std::string& text, bool* all, bool* xids, std::set<uint64_t>* numbers) {
  for (const std::string& item : SplitTrimmed(ToUpper(text), ',')) {
    if (item == "ALL") *all = true;
    if (item == "XIDS") *xids = true;
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec == std::errc() && end == item.data() + item.size()) numbers->insert(v);
  }
}

}  // namespace

XidPolicy::XidPolicy(const std::string& disable, const std::string& enable)
    : ignored_{13, 31, 43, 45, 68, 109} {
  bool disable_all = false;
  bool disable_xids = false;
  bool enable_all = false;
  bool enable_xids = false;
  std::set<uint64_t> disabled;
  ParseList(disable, &disable_all, &disable_xids, &disabled);
  ParseList(enable, &enable_all, &enable_xids, &forced_);
  if ((disable_all || disable_xids) && !(enable_all || enable_xids)) enabled_ = false;
  all_fatal_ = enable_all;
  ignored_.insert(disabled.begin(), disabled.end());
}

bool XidPolicy::Fatal(uint64_t xid) const {
  if (!enabled_) return false;
  if (all_fatal_ || forced_.count(xid) > 0) return true;
  return ignored_.count(xid) == 0;
}

bool GpuHealth::MarkUnhealthy(const std::string& gpu, int64_t now_ms) {
  const bool was_healthy = last_fatal_.count(gpu) == 0;
  last_fatal_[gpu] = now_ms;
  return was_healthy;
}

std::set<std::string> GpuHealth::Recover(int64_t now_ms) {
  std::set<std::string> recovered;
  for (auto it = last_fatal_.begin(); it != last_fatal_.end();) {
    if (recovery_ms_ > 0 && now_ms - it->second >= recovery_ms_) {
      recovered.insert(it->first);
      it = last_fatal_.erase(it);
    } else {
      ++it;
    }
  }
  return recovered;
}

std::set<std::string> GpuHealth::Unhealthy() const {
  std::set<std::string> out;
  for (const auto& [gpu, t] : last_fatal_) out.insert(gpu);
  return out;
}

}  // namespace tessera::node
