#pragma once

// Removes the HAMi-core folders of pods that a complete, fresh pod view proves gone
// (core/node/hami_core_folders.h decides); run by the reconcile pass.

#include <string>
#include <vector>

#include "agent/hami_core_folders.h"
#include "agent/node_api.h"

namespace tessera::agent {

struct FolderSweep {
  std::vector<std::string> removed;  // folder names
  std::vector<std::string> errors;   // listing or removal failures, naming the path
};

// `view` must be complete (every pod bound to the node); `grace_ms` is how far it may still lag
// (the reconcile grace).
FolderSweep SweepHamiCoreFolders(HamiCoreFolders& folders, const PodView& view, int64_t grace_ms);

}  // namespace tessera::agent
