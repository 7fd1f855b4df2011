#pragma once

// GPU health from XID events, with HAMi's policy of which XIDs are fatal (hami-node.md 10) and,
// unlike HAMi (W12), a way back for the XIDs that do not need a GPU reset: such a GPU is healthy
// again after a quiet period without fatal XIDs. Also which GPUs' XID events are received, each
// GPU registered and retried on its own.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/node/retry_backoff.h"

namespace tessera::node {

// What one XID does to its GPU.
enum class XidEffect {
  kIgnored,     // HAMi's ignored set (application errors) or DP_DISABLE_HEALTHCHECKS
  kUnhealthy,   // fatal; healthy again after the quiet period (--health-recovery)
  kNeedsReset,  // fatal, and the GPU stays unhealthy until it is reset (and the agent restarts)
};

class XidPolicy {
 public:
  // DP_DISABLE_HEALTHCHECKS / DP_ENABLE_HEALTHCHECKS: comma lists, "all", "xids" or numbers.
  XidPolicy(const std::string& disable, const std::string& enable);
  bool enabled() const { return enabled_; }
  // HAMi's rule: every XID is fatal but {13, 31, 43, 45, 68, 109} and those disabled, unless
  // enabled; DP_ENABLE_HEALTHCHECKS=all makes every XID fatal.
  bool Fatal(uint64_t xid) const;
  // Fatal XIDs that need a GPU reset never recover by themselves; the others do.
  XidEffect Effect(uint64_t xid) const;
  // The XIDs after which NVIDIA's XID catalog asks for a GPU reset or a node reboot (uncorrectable
  // memory errors, a GPU off the bus, a halted GPU firmware): no quiet period makes such a GPU
  // usable again.
  static bool NeedsGpuReset(uint64_t xid);

 private:
  bool enabled_ = true;
  bool all_fatal_ = false;
  std::set<uint64_t> ignored_;
  std::set<uint64_t> forced_;
};

class GpuHealth {
 public:
  explicit GpuHealth(int64_t recovery_ms) : recovery_ms_(recovery_ms) {}
  // A fatal XID at `now_ms`; true when the GPU just became unhealthy. With `needs_reset` the GPU
  // never recovers (it stays so even if later XIDs would recover).
  bool MarkUnhealthy(const std::string& gpu, int64_t now_ms, bool needs_reset = false);
  // GPUs whose quiet period ended at `now_ms`; they are healthy again.
  std::set<std::string> Recover(int64_t now_ms);
  std::set<std::string> Unhealthy() const;

 private:
  struct Fault {
    int64_t last_fatal_ms = 0;
    bool needs_reset = false;
  };
  int64_t recovery_ms_;
  std::map<std::string, Fault> faults_;
};

// Which GPUs' XID events the agent receives. A GPU whose registration failed is tried again on
// its own back-off (1 s doubling to 5 min); the others keep theirs. HAMi registers every GPU in
// one pass and marks a GPU whose registration fails unhealthy; here such a GPU keeps its health
// (a failed watch says nothing about the GPU) and is reported instead.
class XidWatches {
 public:
  // Of `gpus` (those registered), the ones not watched whose next try is due at `now_ms`.
  std::vector<std::string> Due(const std::vector<std::string>& gpus, int64_t now_ms) const;
  void Watched(const std::string& gpu);
  // A registration failed at `now_ms`: returns the wait before its next try.
  int64_t Failed(const std::string& gpu, int64_t now_ms);
  // Failed tries of `gpu` since it was last watched.
  int64_t failures(const std::string& gpu) const;
  // Of `gpus`, those whose events are not received.
  std::vector<std::string> Unwatched(const std::vector<std::string>& gpus) const;
  bool any_watched() const { return !watched_.empty(); }

 private:
  std::set<std::string> watched_;
  std::map<std::string, RetryBackoff> failing_;
};

}  // namespace tessera::node
