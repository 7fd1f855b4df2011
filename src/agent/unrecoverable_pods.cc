#include "agent/unrecoverable_pods.h"

namespace tessera::agent {

std::vector<PodFailure> UnrecoverablePods::Judge(const ReconcileReport& report, int64_t now_ms) {
  std::vector<PodFailure> out;
  if (lost_grace_ms_ <= 0) return out;
  std::set<std::string> named;
  for (const auto& r : report.recreated) {
    const std::string now_uuid = r.allocation.runtime ? r.allocation.runtime->mig_uuid : "";
    if (r.previous_mig_uuid.empty() || r.previous_mig_uuid == now_uuid) continue;
    if (!named.insert(r.pod_uid).second) continue;
    out.push_back({r.pod, r.pod_uid, "MigInstanceReplaced",
                   r.message + "; the pod is failed so that its controller replaces it"});
  }
  std::map<std::string, int64_t> still_lost;
  for (const auto& l : report.lost) {
    auto seen = lost_since_.find(l.pod_uid);
    const int64_t since = seen == lost_since_.end() ? now_ms : seen->second;
    still_lost.emplace(l.pod_uid, since);
    if (now_ms - since < lost_grace_ms_ || !named.insert(l.pod_uid).second) continue;
    out.push_back({l.pod, l.pod_uid, "MigInstanceLost",
                   l.message + "; lost for " + std::to_string((now_ms - since) / 1000) +
                       " s, the pod is failed so that its controller replaces it"});
  }
  lost_since_ = std::move(still_lost);
  return out;
}

}  // namespace tessera::agent
