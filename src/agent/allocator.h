#pragma once

// The device plugin's Allocate and GetPreferredAllocation: find the pod the kubelet is
// admitting, take its next container's devices from hami.io/vgpu-devices-to-allocate, realize
// MIG instances at the reserved placements (MigManager) or build HAMi-core's environment for
// shared GPUs, then record the outcome on the pod (hami-node.md sections 7-9).

#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "agent/hami_core_folders.h"
#include "agent/mig_device_export.h"
#include "agent/mig_manager.h"
#include "agent/node_api.h"
#include "core/node/device_plugin.h"

namespace tessera::agent {

struct AllocatorConfig {
  std::string node_name;
  node::HamiCoreOptions hami_core;
  node::DeviceListStrategy strategy;
  int patch_attempts = 5;  // compare-and-swap retries of the pod patch on 409
};

class Allocator {
 public:
  // `folders`: HAMi-core's host folders, made for each shared-GPU container (nullptr: none
  // made). `mig_export`: where MIG devices must be described before a container gets them (a
  // CDI spec with a CDI strategy; nullptr: nowhere, the runtime resolves MIG UUIDs itself).
  Allocator(NodeApi& api, MigManager& mig, AllocatorConfig config,
            std::function<std::string()> new_uuid, HamiCoreFolders* folders = nullptr,
            MigDeviceExport* mig_export = nullptr);

  // The GPUs of this node that are in MIG mode (from the last registration).
  void SetMigGpus(std::set<std::string> gpu_uuids);

  // One kubelet Allocate call: the replica ids of each container request, in order.
  Result<std::vector<node::ContainerResponse>> Allocate(
      const std::vector<std::vector<std::string>>& container_requests);
  std::vector<std::vector<std::string>> Preferred(
      const std::vector<node::PreferredRequest>& requests);

 private:
  // The pod being admitted among `pods`: bound here, bind-phase allocating, whose next container
  // entry has `count` devices. Several candidates: the one HAMi's node lock names, else the
  // oldest.
  ApiResult<model::Pod> ChoosePod(const std::vector<model::Pod>& pods, size_t count);
  // `pods_on_node`: the read the pod was found in, for the other pods' MIG claims.
  Result<std::vector<node::ContainerResponse>> AllocateFor(
      const model::Pod& pod, const std::vector<model::Pod>& pods_on_node,
      const std::vector<std::vector<std::string>>& requests);
  void Fail(const model::Pod& pod, const std::string& message);
  void ReleaseNodeLock(const model::Pod& pod);

  NodeApi& api_;
  MigManager& mig_;
  AllocatorConfig config_;
  std::function<std::string()> new_uuid_;
  HamiCoreFolders* folders_;
  MigDeviceExport* mig_export_;
  std::mutex mu_;  // one Allocate at a time, as the kubelet admits pods one at a time
  std::set<std::string> mig_gpus_;
};

}  // namespace tessera::agent
