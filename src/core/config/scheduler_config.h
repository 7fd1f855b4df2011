#pragma once

#include <string>
#include <vector>

#include "core/common/result.h"

namespace tessera::config {

struct MigAllowlistEntry {
  std::vector<std::string> models;    // substrings matched against the GPU model
  std::vector<std::string> profiles;  // profile names, e.g. "1g.5gb"
};

// The `nvidia` section of HAMi's device-config.yaml (hami-protocol.md 10.2).
struct NvidiaConfig {
  std::string resource_count_name = "nvidia.com/gpu";
  std::string resource_memory_name = "nvidia.com/gpumem";
  std::string resource_memory_percentage_name = "nvidia.com/gpumem-percentage";
  std::string resource_core_name = "nvidia.com/gpucores";
  std::string resource_priority_name = "nvidia.com/priority";
  bool overwrite_env = false;
  int32_t default_memory = 0;
  int32_t default_cores = 0;
  int32_t default_gpu_num = 1;
  int32_t memory_factor = 1;
  bool disable_core_limit = false;
  std::string gpu_core_policy = "default";
  std::string runtime_class_name;
  int32_t device_split_count = 10;
  double device_memory_scaling = 1.0;
  double device_core_scaling = 1.0;
  int32_t pre_configured_device_memory = 0;
  bool enable_numa_topology = false;
  std::string
      lib_cuda_log_level;  // HAMi-core's LIBCUDA_LOG_LEVEL for shared containers; "" = unset
  std::vector<MigAllowlistEntry> mig_profile_allowlist;
  // tessera's, read by the agent only: what a GPU of a `mig` node whose MIG mode is off becomes,
  // "none" (left out) or "hami-core" (shared). HAMi ignores the key.
  std::string mig_fallback = "none";

  // The allowlist's profiles for a GPU model: the first entry with a model substring of `type`.
  // nullptr when no entry matches (all reported profiles are allowed).
  const std::vector<std::string>* AllowedProfiles(const std::string& type) const;
};

struct SchedulerConfig {
  NvidiaConfig nvidia;
  std::vector<std::string> warnings;  // e.g. ignored vendor sections
};

// Validates the allowlist as HAMi does: non-empty models and profiles; each profile has a "."
// and its part before the first "." is at least two characters ending in "g".
Status ValidateMigAllowlist(const std::vector<MigAllowlistEntry>& allowlist);

}  // namespace tessera::config
