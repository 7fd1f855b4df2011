#include "core/node/mig_claims.h"

#include <algorithm>

#include "core/model/annotations.h"

namespace tessera::node {

NodeClaims ClaimsOnNode(const std::vector<model::Pod>& pods, const std::string& node_name) {
  NodeClaims out;
  for (const auto& pod : pods) {
    if (pod.node_name != node_name || pod.IsTerminal()) continue;
    const std::string* text = pod.Annotation(std::string(model::annotations::kMigAllocations));
    if (text == nullptr || text->empty()) continue;
    auto decoded = codec::DecodeMigAllocations(*text);
    if (!decoded.ok()) {
      out.problems.push_back(pod.Key() + ": " + decoded.error().message);
      // Every GPU the pod names anywhere is held, whatever else can be read.
      for (std::string_view key :
           {model::annotations::kDevicesToAllocate, model::annotations::kDevicesAllocated}) {
        const std::string* devices = pod.Annotation(std::string(key));
        if (devices == nullptr) continue;
        for (size_t pos = 0; (pos = devices->find("GPU-", pos)) != std::string::npos;) {
          size_t end = devices->find_first_of(",:;", pos);
          out.unreadable_gpus.push_back(devices->substr(pos, end - pos));
          pos = end == std::string::npos ? devices->size() : end;
        }
      }
      for (size_t pos = 0; (pos = text->find("GPU-", pos)) != std::string::npos;) {
        size_t end = text->find_first_of("\",", pos);
        out.unreadable_gpus.push_back(text->substr(pos, end - pos));
        pos = end == std::string::npos ? text->size() : end;
      }
      continue;
    }
    out.claims.push_back(PodMigClaim{pod.Key(), pod.uid, std::move(decoded.value())});
  }
  std::sort(out.unreadable_gpus.begin(), out.unreadable_gpus.end());
  out.unreadable_gpus.erase(std::unique(out.unreadable_gpus.begin(), out.unreadable_gpus.end()),
                            out.unreadable_gpus.end());
  return out;
}

}  // namespace tessera::node
