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

XidEffect XidPolicy::Effect(uint64_t xid) const {
  if (!Fatal(xid)) return XidEffect::kIgnored;
  return NeedsGpuReset(xid) ? XidEffect::kNeedsReset : XidEffect::kUnhealthy;
}

bool XidPolicy::NeedsGpuReset(uint64_t xid) {
  switch (xid) {
    case 48:   // double-bit ECC error: memory the GPU cannot correct
    case 62:   // internal micro-controller halt
    case 64:   // ECC page retirement or row remapping failed
    case 74:   // NVLink error
    case 79:   // the GPU has fallen off the bus
    case 92:   // high single-bit ECC error rate
    case 95:   // uncontained ECC error
    case 119:  // GSP RPC timeout
    case 120:  // GSP error
    case 140:  // unrecovered ECC error
      return true;
    default:
      return false;
  }
}

bool GpuHealth::MarkUnhealthy(const std::string& gpu, int64_t now_ms, bool needs_reset) {
  auto [it, was_healthy] = faults_.try_emplace(gpu);
  it->second.last_fatal_ms = now_ms;
  it->second.needs_reset = it->second.needs_reset || needs_reset;
  return was_healthy;
}

std::set<std::string> GpuHealth::Recover(int64_t now_ms) {
  std::set<std::string> recovered;
  for (auto it = faults_.begin(); it != faults_.end();) {
    const Fault& f = it->second;
    if (recovery_ms_ > 0 && !f.needs_reset && now_ms - f.last_fatal_ms >= recovery_ms_) {
      recovered.insert(it->first);
      it = faults_.erase(it);
    } else {
      ++it;
    }
  }
  return recovered;
}

std::set<std::string> GpuHealth::Unhealthy() const {
  std::set<std::string> out;
  for (const auto& [gpu, fault] : faults_) out.insert(gpu);
  return out;
}

std::vector<std::string> XidWatches::Due(const std::vector<std::string>& gpus,
                                         int64_t now_ms) const {
  std::vector<std::string> due;
  for (const auto& gpu : gpus) {
    if (watched_.count(gpu) > 0) continue;
    auto it = failing_.find(gpu);
    if (it == failing_.end() || it->second.Due(now_ms)) due.push_back(gpu);
  }
  return due;
}

void XidWatches::Watched(const std::string& gpu) {
  watched_.insert(gpu);
  failing_.erase(gpu);
}

int64_t XidWatches::Failed(const std::string& gpu, int64_t now_ms) {
  return failing_[gpu].Failed(now_ms);
}

int64_t XidWatches::failures(const std::string& gpu) const {
  auto it = failing_.find(gpu);
  return it == failing_.end() ? 0 : it->second.failures();
}

std::vector<std::string> XidWatches::Unwatched(const std::vector<std::string>& gpus) const {
  std::vector<std::string> out;
  for (const auto& gpu : gpus) {
    if (watched_.count(gpu) == 0) out.push_back(gpu);
  }
  return out;
}

}  // namespace tessera::node
