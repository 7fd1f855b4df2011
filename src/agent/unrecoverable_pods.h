#pragma once

// Which live pods to fail because their MIG instance is gone for good, so that their controllers
// replace them instead of leaving them broken. Two cases, both proven by a reconcile pass (a
// complete listing of the GPU and a pod view recent enough to recreate from):
// - the instance was recreated under a new MIG UUID while the pod had been handed the old one:
//   the kubelet caches its Allocate answer and restarts the pod's containers with the old UUID,
//   which no longer exists, so they can never start again (reason MigInstanceReplaced);
// - the instance could not be recreated (its slices are taken, the driver refuses) for longer
//   than a grace period: a transient driver error gets that long to clear (MigInstanceLost).

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/mig_manager.h"

namespace tessera::agent {

struct PodFailure {
  std::string pod;  // namespace/name
  std::string pod_uid;
  std::string reason;  // MigInstanceReplaced or MigInstanceLost
  std::string message;
};

class UnrecoverablePods {
 public:
  // `lost_grace_ms` <= 0: never fail a pod (its instance is only reported).
  explicit UnrecoverablePods(int64_t lost_grace_ms) : lost_grace_ms_(lost_grace_ms) {}

  // After each reconcile pass: the pods to fail now. A pod is named again on later passes while
  // the report still shows it (a failed patch is retried); state is kept only for pods the
  // report names, so it stays bounded by the node's pods.
  std::vector<PodFailure> Judge(const ReconcileReport& report, int64_t now_ms);

 private:
  int64_t lost_grace_ms_;
  std::map<std::string, int64_t> lost_since_;  // pod uid -> first pass that reported it lost
};

}  // namespace tessera::agent
