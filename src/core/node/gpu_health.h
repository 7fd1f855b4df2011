#pragma once

// GPU health from XID events, with HAMi's policy of which XIDs are fatal (hami-node.md 10) and,
// unlike HAMi (W12), a way back: a GPU is healthy again after a quiet period without fatal XIDs.

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace tessera::node {

class XidPolicy {
 public:
  // DP_DISABLE_HEALTHCHECKS / DP_ENABLE_HEALTHCHECKS: comma lists, "all", "xids" or numbers.
  XidPolicy(const std::string& disable, const std::string& enable);
  bool enabled() const { return enabled_; }
  bool Fatal(uint64_t xid) const;

 private:
  bool enabled_ = true;
  bool all_fatal_ = false;
  std::set<uint64_t> ignored_;
  std::set<uint64_t> forced_;
};

class GpuHealth {
 public:
  explicit GpuHealth(int64_t recovery_ms) : recovery_ms_(recovery_ms) {}
  // A fatal XID at `now_ms`; true when the GPU just became unhealthy.
  bool MarkUnhealthy(const std::string& gpu, int64_t now_ms);
  // GPUs whose quiet period ended at `now_ms`; they are healthy again.
  std::set<std::string> Recover(int64_t now_ms);
  std::set<std::string> Unhealthy() const;

 private:
  int64_t recovery_ms_;
  std::map<std::string, int64_t> last_fatal_;
};

}  // namespace tessera::node
