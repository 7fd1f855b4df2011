#include "scheduler/housekeeping.h"

#include <spdlog/spdlog.h>

#include <string>
#include <utility>
#include <vector>

#include "core/model/annotations.h"

namespace tessera::scheduler {

namespace ann = model::annotations;

size_t Housekeeping::ExpireReservations() {
  const std::vector<state::ReservationCache::Expired> expired = view_.ExpireReservations();
  for (const auto& e : expired) {
    const size_t slash = e.key.find('/');
    const PodRef ref{e.key.substr(0, slash), e.key.substr(slash + 1), e.uid};
    spdlog::info("released the reservation of pod {} on {}: not bound in time", ref.Key(), e.node);
    writer_.RecordEvent(
        ref, true, "ReservationExpired",
        "devices reserved on node " + e.node + " were released: the pod was not bound in time");
  }
  view_.metrics().ReservationsExpired(expired.size());
  return expired.size();
}

size_t Housekeeping::CheckNodeLiveness() {
  const ClusterView::LivenessPass pass = view_.CheckNodeLiveness();
  for (const auto& [name, reason] : pass.changed) {
    if (reason.empty()) {
      spdlog::info("node {}: its device plugin is back; it takes GPU pods again", name);
    } else {
      spdlog::warn("node {}: {}; no new GPU pods go there until it is back", name, reason);
    }
  }
  return pass.not_live;
}

size_t Housekeeping::RequeueWaitingPods() {
  if (view_.options().requeue_after.count() <= 0) return 0;
  const std::vector<PodRef> requeue = view_.WaitingPodsThatNowFit();
  // A new value each time: an unchanged annotation would be no update at all.
  const std::string stamp = std::to_string(view_.clocks().unix_seconds());
  size_t done = 0;
  for (const PodRef& ref : requeue) {
    Status s = writer_.PatchPodAnnotations(ref, {{std::string(ann::kRequeuedAt), stamp}});
    if (!s.ok()) {
      spdlog::warn("requeue {}: {}", ref.Key(), s.message());
      continue;
    }
    ++done;
    spdlog::info("pod {} fits since its last filter; asked kube-scheduler to try it again",
                 ref.Key());
    writer_.RecordEvent(ref, false, "Requeued",
                        "GPU capacity came free after the last scheduling attempt; asked "
                        "kube-scheduler to try again");
  }
  view_.metrics().Requeued(done);
  return done;
}

}  // namespace tessera::scheduler
