#pragma once

// What the node agent publishes in hami.io/node-nvidia-register, built from what the driver
// reports and the node's configuration, by HAMi's rules (hami-node.md 5.2, 9.2) with a stable
// order (by NVML index) so that an unchanged node is never re-patched.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/config/scheduler_config.h"
#include "core/model/device.h"
#include "core/node/gpu_driver.h"

namespace tessera::node {

// What a GPU of a "mig" node whose MIG mode is off (or only pending, until a GPU reset) becomes.
// kNone, the default: left out of the registration and the kubelet's devices, so nothing lands
// on it (a MIG pod would fail at Allocate, and sharing is not what the node was configured for).
// kHamiCore: shared with HAMi-core as a GPU without MIG, as tessera did before.
enum class MigFallback { kNone, kHamiCore };

// The effective configuration of one node: device-config.yaml's nvidia section with the
// node's entry of config.json applied (node_config.h).
struct NodeDeviceConfig {
  std::string operating_mode = "hami-core";
  int32_t device_split_count = 10;
  double device_memory_scaling = 1.0;
  double device_core_scaling = 1.0;
  int32_t pre_configured_device_memory = 0;  // MiB, when NVML cannot report memory
  std::string lib_cuda_log_level;
  bool enable_numa_topology = false;
  bool disable_core_limit = false;
  bool preferred_allocation = true;  // GetPreferredAllocation advertised to the kubelet
  std::string resource_count_name = "nvidia.com/gpu";
  std::set<std::string> filter_uuids;  // GPUs left out entirely
  std::set<uint32_t> filter_indexes;
  // Empty: every profile the driver reports. Otherwise the first entry whose models name a
  // substring of the GPU's name gives its profiles, and a model no entry names gets none.
  std::vector<config::MigAllowlistEntry> mig_profile_allowlist;
  MigFallback mig_fallback = MigFallback::kNone;
};

struct RegistrationInput {
  std::vector<DriverGpu> gpus;
  std::set<std::string> unhealthy;      // GPU UUIDs
  std::map<std::string, int32_t> numa;  // GPU UUID -> NUMA node (absent: 0)
};

// A GPU that the node's "mig" operating mode wants in MIG mode, whose MIG mode is not on.
struct MigModeOff {
  std::string gpu_uuid;
  uint32_t index = 0;
  bool reset_pending = false;  // on after the next GPU reset or reboot
  bool shared = false;         // registered for HAMi-core (kHamiCore); else left out
  bool operator==(const MigModeOff&) const = default;
};

struct Registration {
  std::vector<model::GpuDevice> devices;  // by NVML index
  std::vector<std::string> notes;         // GPUs left out or registered otherwise, and why
  std::vector<MigModeOff> mig_mode_off;   // by NVML index
};

Registration BuildRegistration(const RegistrationInput& input, const NodeDeviceConfig& config);

// "none" -> kNone, "hami-core" -> kHamiCore; nullopt for anything else.
std::optional<MigFallback> ParseMigFallback(const std::string& text);

// HAMi's `type`: the NVML name, prefixed "NVIDIA-" when it does not start with "NVIDIA".
std::string RegisteredType(const std::string& nvml_name);

}  // namespace tessera::node
