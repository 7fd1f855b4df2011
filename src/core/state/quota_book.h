#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/codec/pod_devices.h"
#include "core/config/scheduler_config.h"
#include "core/model/resource_quota.h"

namespace tessera::state {

// GPU memory (MiB, memoryFactor applied) and cores (percent of a GPU) that count against a
// namespace's quota.
struct QuotaUse {
  int64_t mem = 0;
  int64_t cores = 0;
  bool operator==(const QuotaUse&) const = default;
};

// What a namespace may still take; nullopt where no quota limits that resource. Negative when a
// quota was lowered below what is already used.
struct QuotaHeadroom {
  std::optional<int64_t> mem;
  std::optional<int64_t> cores;
  bool Admits(const QuotaUse& use) const {
    return (!mem || use.mem <= *mem) && (!cores || use.cores <= *cores);
  }
};

// HAMi's collapse of one pod's device entries into quota use (hami-protocol.md 4, 5.10): per GPU,
// init containers at their peak and app containers summed, the larger of the two; then summed
// over GPUs. GPUs are told apart by a small integer id. A pod touches few GPUs: they are kept
// inline, with a vector only past that (no allocation on the filter's hot path).
class QuotaCollapse {
 public:
  void Add(int64_t gpu, bool init, int64_t mem, int64_t cores);
  QuotaUse Total() const;

 private:
  struct PerGpu {
    int64_t gpu = 0, init_mem = 0, init_cores = 0, app_mem = 0, app_cores = 0;
  };
  PerGpu& Find(int64_t gpu);
  std::array<PerGpu, 16> inline_{};
  size_t inline_used_ = 0;
  std::vector<PerGpu> more_;
};

// A pod's use as HAMi's quota counts it (QuotaCollapse over its allocation annotation).
QuotaUse QuotaUseOf(const codec::PodDevices& devices, int num_init);

// The GPU quotas of every namespace (ResourceQuota spec.hard "limits.<memory resource>" and
// "limits.<core resource>", as HAMi reads them) and what the pods there use, kept incrementally.
// Several quotas in one namespace all apply (the tightest limit wins), as Kubernetes applies
// quotas; HAMi keeps only the last one it saw.
class QuotaBook {
 public:
  explicit QuotaBook(const config::NvidiaConfig& config);

  // Adds or replaces one ResourceQuota. A limit that is not a whole non-negative number is
  // skipped and named in the returned messages; the quota's other limits still apply.
  std::vector<std::string> Upsert(const model::ResourceQuota& quota);
  void Remove(const std::string& ns, const std::string& name);

  void AddUse(const std::string& ns, const QuotaUse& use);
  void RemoveUse(const std::string& ns, const QuotaUse& use);

  // nullopt when no quota limits GPU memory or cores in the namespace.
  std::optional<QuotaHeadroom> HeadroomFor(const std::string& ns) const;

  struct Limits {
    std::optional<int64_t> mem;    // as written (in units of the memory resource)
    std::optional<int64_t> cores;  // percent
  };
  struct Namespace {
    std::map<std::string, Limits> quotas;  // by ResourceQuota name
    QuotaUse used;
  };
  const std::map<std::string, Namespace>& namespaces() const { return namespaces_; }
  // The memory limit key ("limits.nvidia.com/gpumem") and the core limit key.
  const std::string& memory_key() const { return memory_key_; }
  const std::string& core_key() const { return core_key_; }
  // A memory limit as written, in MiB (the memory resource's unit times the configured factor,
  // saturating): what usage, in MiB, is compared with.
  int64_t MemoryLimitMib(int64_t written) const {
    return written > INT64_MAX / memory_factor_ ? INT64_MAX : written * memory_factor_;
  }

 private:
  std::string memory_key_;
  std::string core_key_;
  int64_t memory_factor_ = 1;
  std::map<std::string, Namespace> namespaces_;
};

}  // namespace tessera::state
