#pragma once

// What the node agent publishes in hami.io/node-nvidia-register, built from what the driver
// reports and the node's configuration, by HAMi's rules (hami-node.md 5.2, 9.2) with a stable
// order (by NVML index) so that an unchanged node is never re-patched.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/config/scheduler_config.h"
#include "core/model/device.h"
#include "core/node/gpu_driver.h"

namespace tessera::node {

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
};

struct RegistrationInput {
  std::vector<DriverGpu> gpus;
  std::set<std::string> unhealthy;      // GPU UUIDs
  std::map<std::string, int32_t> numa;  // GPU UUID -> NUMA node (absent: 0)
};

struct Registration {
  std::vector<model::GpuDevice> devices;  // by NVML index
  std::vector<std::string> notes;         // GPUs left out, and why
};

Registration BuildRegistration(const RegistrationInput& input, const NodeDeviceConfig& config);

// HAMi's `type`: the NVML name, prefixed "NVIDIA-" when it does not start with "NVIDIA".
std::string RegisteredType(const std::string& nvml_name);

}  // namespace tessera::node
