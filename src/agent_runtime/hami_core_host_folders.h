#pragma once

// HAMi-core's folders on the host's file system (agent::HamiCoreFolders): each shared-GPU
// container's `<hook>/vgpu/containers/<podUID>_<container>` and the lock folder /tmp/vgpulock,
// both 0777 as HAMi's plugin makes them (the container's user is unknown). In the DaemonSet
// both are writable hostPath mounts of their own; the rest of the hook folder is read-only.

#include <string>
#include <vector>

#include "agent/hami_core_folders.h"
#include "core/node/device_plugin.h"

namespace tessera::agent_runtime {

class HamiCoreHostFolders final : public agent::HamiCoreFolders {
 public:
  explicit HamiCoreHostFolders(const std::string& hook_path,
                               std::string lock_dir = node::kVgpuLockDir);

  Status Prepare(const std::string& pod_uid, const std::string& container) override;
  Result<std::vector<node::ContainerFolder>> List() override;
  Status Remove(const std::string& name) override;

  const std::string& containers_dir() const { return containers_dir_; }

 private:
  std::string containers_dir_;  // <hook>/vgpu/containers
  std::string lock_dir_;
};

}  // namespace tessera::agent_runtime
