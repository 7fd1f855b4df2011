#pragma once

// HAMi-core's per-container folders on the host: `<hook>/vgpu/containers/<podUID>_<container>`
// is mounted into a shared-GPU container at `<hook>/vgpu` (its shared-memory cache lives there,
// hami-node.md 8.2). The agent makes one at Allocate and removes it once its pod is provably
// gone; this decides which, the agent's folder adapter acts.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/pod.h"

namespace tessera::node {

// "<podUID>_<container>": a container name is a DNS label (no "_"), so the first "_" splits.
std::string ContainerFolderName(const std::string& pod_uid, const std::string& container);

struct ContainerFolder {
  std::string name;         // "<podUID>_<container>"
  int64_t modified_ms = 0;  // last change (agent clock, ms since the epoch)
};

// The pod UID a folder name starts with; nullopt for a name that is not "<uid>_<container>".
std::optional<std::string> FolderPodUid(const std::string& name);

// The folders a pod view proves unused: the view is complete and includes every pod change up
// to `view_fresh_ms`; a folder whose pod is not in it (or has ended, Succeeded or Failed) and
// that is older than that freshness by `grace_ms` (the watch latency: the pod of a folder made
// by a recent Allocate may not be in the view yet) is removed. Names not of our form are never
// touched.
std::vector<std::string> ContainerFoldersToRemove(const std::vector<ContainerFolder>& folders,
                                                  const std::vector<model::Pod>& pods_on_node,
                                                  int64_t view_fresh_ms, int64_t grace_ms);

}  // namespace tessera::node
