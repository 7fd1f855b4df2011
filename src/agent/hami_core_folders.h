#pragma once

// The host folders HAMi-core needs, as a port: the allocator makes a shared-GPU container's
// folders before it answers the kubelet, the reconcile removes those of pods that are gone.
// agent_runtime implements it on the host's file system; tests use a fake.

#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/node/hami_core_folders.h"

namespace tessera::agent {

class HamiCoreFolders {
 public:
  virtual ~HamiCoreFolders() = default;
  // `<hook>/vgpu/containers/<podUID>_<container>` and `/tmp/vgpulock`, made when missing and
  // opened to everyone (0777, as HAMi does: the container's user is unknown). Errors name the
  // path.
  virtual Status Prepare(const std::string& pod_uid, const std::string& container) = 0;
  // The folders under `<hook>/vgpu/containers` (none when it does not exist).
  virtual Result<std::vector<node::ContainerFolder>> List() = 0;
  // Removes one of them with its content; a folder already gone is no error.
  virtual Status Remove(const std::string& name) = 0;
};

}  // namespace tessera::agent
