#pragma once

// The kubelet device-plugin API in tessera's own terms (the gRPC adapter converts), and the
// container responses the agent gives: HAMi-core's environment and mounts for shared GPUs,
// MIG device UUIDs for MIG instances (hami-node.md section 8).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/codec/pod_devices.h"

namespace tessera::node {

struct PluginDevice {
  std::string id;  // "<GPU-UUID>-<n>": HAMi's replica ids, deviceSplitCount per GPU
  bool healthy = true;
  int numa = -1;  // -1: no topology reported
  bool operator==(const PluginDevice&) const = default;
};

struct MountSpec {
  std::string container_path;
  std::string host_path;
  bool read_only = false;
  bool operator==(const MountSpec&) const = default;
};

struct DeviceNodeSpec {
  std::string container_path;
  std::string host_path;
  std::string permissions = "rw";
};

struct ContainerResponse {
  std::map<std::string, std::string> envs;
  std::vector<MountSpec> mounts;
  std::vector<DeviceNodeSpec> devices;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> cdi_devices;
};

struct PreferredRequest {
  std::vector<std::string> available;
  std::vector<std::string> must_include;
  int size = 0;
};

// How device ids reach the container runtime (HAMi's --device-list-strategy).
struct DeviceListStrategy {
  bool envvar = true;
  bool cdi_cri = false;
  bool cdi_annotations = false;
  std::string cdi_annotation_prefix = "cdi.k8s.io/";
  std::string cdi_kind = "k8s.device-plugin.nvidia.com/gpu";
};

// HAMi-core's lock folder, the same path on the host and in the container (hami-node.md 8.2).
inline constexpr const char* kVgpuLockDir = "/tmp/vgpulock";

// What HAMi-core needs on the node (hami-node.md 8.2).
struct HamiCoreOptions {
  std::string hook_path = "/usr/local";  // HAMi's HOOK_PATH: holds vgpu/libvgpu.so
  std::string lib_path;                  // libvgpu.so on the host; "" = <hook>/vgpu/libvgpu.so
  double device_memory_scaling = 1.0;
  std::string lib_cuda_log_level;
  bool disable_core_limit = false;
  bool license_present = false;  // <hook>/vgpu/license exists
};

// Replica ids for kubelet: deviceSplitCount per GPU, each with the GPU's health.
std::vector<PluginDevice> ReplicaDevices(const std::vector<std::string>& gpu_uuids,
                                         const std::vector<bool>& healthy,
                                         const std::vector<int>& numa, int32_t split_count);
// "<GPU-UUID>-<n>" -> "<GPU-UUID>" (HAMi 6.4: "::" replicas, or a numeric suffix after the
// UUID's fifth dash).
std::string PhysicalId(const std::string& replica_id);

// Whether a kubelet device id is one of our replicas of this GPU ("<uuid>-<n>" or "<uuid>::<n>").
bool IsReplicaOf(const std::string& replica_id, const std::string& gpu_uuid);

// The ids as the configured strategies deliver them (envvar, CDI names, CDI annotation).
void AddDeviceIds(const std::vector<std::string>& ids, const DeviceListStrategy& strategy,
                  const std::string& annotation_suffix, ContainerResponse* response);

// HAMi-core's limits for one container: memory per device, SM limit, shared cache, preload.
// `cache_id` names the shared-cache file (a fresh UUID per container in production).
ContainerResponse SharedGpuResponse(const codec::ContainerDevices& devices,
                                    const HamiCoreOptions& options,
                                    const DeviceListStrategy& strategy, const std::string& pod_uid,
                                    const std::string& container, bool cuda_disable_control,
                                    const std::string& cache_id);

// Preferred ids for one container: for each annotated device, the first available replica of
// that GPU (must_include first); empty when the pod's devices cannot be met from `available`.
std::vector<std::string> PreferredReplicas(const codec::ContainerDevices& devices,
                                           const PreferredRequest& request);

}  // namespace tessera::node
