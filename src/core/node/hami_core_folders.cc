#include "core/node/hami_core_folders.h"

#include <map>

namespace tessera::node {

std::string ContainerFolderName(const std::string& pod_uid, const std::string& container) {
  return pod_uid + "_" + container;
}

std::optional<std::string> FolderPodUid(const std::string& name) {
  const size_t split = name.find('_');
  if (split == std::string::npos || split == 0 || split + 1 == name.size()) return std::nullopt;
  return name.substr(0, split);
}

std::vector<std::string> ContainerFoldersToRemove(const std::vector<ContainerFolder>& folders,
                                                  const std::vector<model::Pod>& pods_on_node,
                                                  int64_t view_fresh_ms, int64_t grace_ms) {
  std::map<std::string, bool> running;  // uid -> its containers may still run
  for (const auto& p : pods_on_node) running[p.uid] = running[p.uid] || !p.IsTerminal();
  std::vector<std::string> out;
  for (const auto& f : folders) {
    const auto uid = FolderPodUid(f.name);
    if (!uid) continue;
    // Too young for the view to prove anything: its pod may have been admitted after it.
    if (f.modified_ms + grace_ms > view_fresh_ms) continue;
    const auto it = running.find(*uid);
    if (it != running.end() && it->second) continue;
    out.push_back(f.name);
  }
  return out;
}

}  // namespace tessera::node
