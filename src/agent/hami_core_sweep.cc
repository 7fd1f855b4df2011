#include "agent/hami_core_sweep.h"

namespace tessera::agent {

FolderSweep SweepHamiCoreFolders(HamiCoreFolders& folders, const PodView& view, int64_t grace_ms) {
  FolderSweep out;
  auto listed = folders.List();
  if (!listed.ok()) {
    out.errors.push_back("HAMi-core folders: " + listed.error().message);
    return out;
  }
  for (const std::string& name :
       node::ContainerFoldersToRemove(listed.value(), view.pods, view.fresh_ms, grace_ms)) {
    if (auto removed = folders.Remove(name); !removed) {
      out.errors.push_back("HAMi-core folders: " + removed.message());
      continue;
    }
    out.removed.push_back(name);
  }
  return out;
}

}  // namespace tessera::agent
