#include "core/node/device_plugin.h"

#include <algorithm>
#include <cctype>

#include "core/node/hami_core_folders.h"

namespace tessera::node {

std::vector<PluginDevice> ReplicaDevices(const std::vector<std::string>& gpu_uuids,
                                         const std::vector<bool>& healthy,
                                         const std::vector<int>& numa, int32_t split_count) {
  std::vector<PluginDevice> out;
  for (size_t g = 0; g < gpu_uuids.size(); ++g) {
    for (int32_t i = 0; i < split_count; ++i) {
      out.push_back(PluginDevice{gpu_uuids[g] + "-" + std::to_string(i),
                                 g < healthy.size() ? healthy[g] : true,
                                 g < numa.size() ? numa[g] : -1});
    }
  }
  return out;
}

std::string PhysicalId(const std::string& replica_id) {
  if (size_t pos = replica_id.find("::"); pos != std::string::npos)
    return replica_id.substr(0, pos);
  if (std::count(replica_id.begin(), replica_id.end(), '-') != 6) return replica_id;
  const size_t last = replica_id.rfind('-');
  const std::string suffix = replica_id.substr(last + 1);
  if (suffix.empty() ||
      !std::all_of(suffix.begin(), suffix.end(), [](char c) { return std::isdigit(c) != 0; })) {
    return replica_id;
  }
  return replica_id.substr(0, last);
}

void AddDeviceIds(const std::vector<std::string>& ids, const DeviceListStrategy& strategy,
                  const std::string& annotation_suffix, ContainerResponse* response) {
  std::vector<std::string> unique;
  for (const auto& id : ids) {
    if (std::find(unique.begin(), unique.end(), id) == unique.end()) unique.push_back(id);
  }
  std::string joined;
  for (const auto& id : unique) joined += (joined.empty() ? "" : ",") + id;
  if (strategy.envvar) response->envs["NVIDIA_VISIBLE_DEVICES"] = joined;
  std::string names;
  for (const auto& id : unique) {
    const std::string name = strategy.cdi_kind + "=" + id;
    if (strategy.cdi_cri) response->cdi_devices.push_back(name);
    names += (names.empty() ? "" : ",") + name;
  }
  if (strategy.cdi_annotations) {
    response->annotations[strategy.cdi_annotation_prefix + "nvidia-device-plugin_" +
                          annotation_suffix] = names;
  }
}

ContainerResponse SharedGpuResponse(const codec::ContainerDevices& devices,
                                    const HamiCoreOptions& options,
                                    const DeviceListStrategy& strategy, const std::string& pod_uid,
                                    const std::string& container, bool cuda_disable_control,
                                    const std::string& cache_id) {
  ContainerResponse r;
  std::vector<std::string> ids;
  for (const auto& d : devices) ids.push_back(d.uuid);
  AddDeviceIds(ids, strategy, cache_id, &r);
  for (size_t i = 0; i < devices.size(); ++i) {
    r.envs["CUDA_DEVICE_MEMORY_LIMIT_" + std::to_string(i)] =
        std::to_string(devices[i].used_mem) + "m";
  }
  // HAMi-core reads one SM limit for the container; HAMi takes the first device's. With
  // several devices tessera takes the largest, so no device is held below its reservation.
  int32_t cores = 0;
  for (const auto& d : devices) cores = std::max(cores, d.used_cores);
  r.envs["CUDA_DEVICE_SM_LIMIT"] = std::to_string(cores);
  const std::string vgpu = options.hook_path + "/vgpu";
  r.envs["CUDA_DEVICE_MEMORY_SHARED_CACHE"] = vgpu + "/" + cache_id + ".cache";
  if (options.device_memory_scaling > 1.0) r.envs["CUDA_OVERSUBSCRIBE"] = "true";
  if (!options.lib_cuda_log_level.empty()) r.envs["LIBCUDA_LOG_LEVEL"] = options.lib_cuda_log_level;
  if (options.disable_core_limit) r.envs["GPU_CORE_UTILIZATION_POLICY"] = "disable";
  const std::string lib = options.lib_path.empty() ? vgpu + "/libvgpu.so" : options.lib_path;
  r.mounts.push_back({vgpu + "/libvgpu.so", lib, true});
  // The cache folder, the lock folder and the preload are HAMi-core's: a container that turns
  // it off (CUDA_DISABLE_CONTROL) gets none of them, so the agent makes no folder for it.
  if (!cuda_disable_control) {
    r.mounts.push_back(
        {vgpu, vgpu + "/containers/" + ContainerFolderName(pod_uid, container), false});
    r.mounts.push_back({kVgpuLockDir, kVgpuLockDir, false});
    r.mounts.push_back({"/etc/ld.so.preload", vgpu + "/ld.so.preload", true});
  }
  if (options.license_present) {
    r.mounts.push_back({"/tmp/license", vgpu + "/license", true});
    r.mounts.push_back({"/usr/bin/vgpuvalidator", vgpu + "/vgpuvalidator", true});
  }
  return r;
}

bool IsReplicaOf(const std::string& replica_id, const std::string& gpu_uuid) {
  if (replica_id.size() <= gpu_uuid.size() + 1 ||
      replica_id.compare(0, gpu_uuid.size(), gpu_uuid) != 0) {
    return false;
  }
  const std::string rest = replica_id.substr(gpu_uuid.size());
  if (rest.rfind("::", 0) == 0) return true;
  return rest[0] == '-' &&
         std::all_of(rest.begin() + 1, rest.end(), [](char c) { return std::isdigit(c) != 0; });
}

std::vector<std::string> PreferredReplicas(const codec::ContainerDevices& devices,
                                           const PreferredRequest& request) {
  std::vector<std::string> out;
  std::vector<std::string> pool = request.must_include;
  for (const auto& id : request.available) {
    if (std::find(pool.begin(), pool.end(), id) == pool.end()) pool.push_back(id);
  }
  const size_t want = std::min<size_t>(devices.size(), std::max(0, request.size));
  for (size_t i = 0; i < want; ++i) {
    auto it = std::find_if(pool.begin(), pool.end(), [&](const std::string& id) {
      return IsReplicaOf(id, devices[i].uuid) && std::find(out.begin(), out.end(), id) == out.end();
    });
    if (it == pool.end()) return {};
    out.push_back(*it);
  }
  return out;
}

}  // namespace tessera::node
