#pragma once

#include <cstddef>

#include "scheduler/cluster_view.h"
#include "scheduler/cluster_writer.h"

namespace tessera::scheduler {

// The periodic passes over the cluster view (`tessera serve` runs each every second): each takes
// the view's lock once, then logs, records events and writes outside it. Thread-safe, as the
// view is.
class Housekeeping {
 public:
  Housekeeping(ClusterView& view, ClusterWriter& writer) : view_(view), writer_(writer) {}

  // Releases reservations that filter made and no bind confirmed in time, with a
  // ReservationExpired event on each pod; returns how many.
  size_t ExpireReservations();
  // The liveness pass (as HAMi's register loop): nodes whose allocatable GPU count has been 0
  // for node_liveness_grace become unusable, and usable again once it is not. Returns how many
  // nodes are not live.
  size_t CheckNodeLiveness();
  // The requeue pass (ServiceOptions::requeue_after): writes tessera.io/requeued-at on each
  // waiting pod kube-scheduler will not retry on its own and that now fits, and records a
  // Normal event `Requeued`. Only the leader writes. Returns how many.
  size_t RequeueWaitingPods();

 private:
  ClusterView& view_;
  ClusterWriter& writer_;
};

}  // namespace tessera::scheduler
