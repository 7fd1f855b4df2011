#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model/device.h"
#include "core/sched/node_status.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// A device as granted, resolved to its GPU (what annotations and reports show).
struct GrantedDevice {
  std::string uuid;
  int32_t mem = 0;
  int32_t cores = 0;
  std::string mig_profile;  // empty when not MIG
  model::Placement placement;
};

// How a scheduling cycle ended for a pod.
enum class Outcome {
  kUnschedulable,   // no node fits (failed_nodes says why, when reasons are collected)
  kScheduled,       // placed on `node`; `reservation` holds what it takes
  kInvalidRequest,  // the pod itself is malformed (`message` names the field)
  kPassthrough,     // no GPU request: not this scheduler's, kube-scheduler places it
};

// The outcome of one scheduling cycle for one pod.
struct Decision {
  Outcome outcome = Outcome::kUnschedulable;
  bool scheduled() const { return outcome == Outcome::kScheduled; }
  bool invalid_request() const { return outcome == Outcome::kInvalidRequest; }
  bool passthrough() const { return outcome == Outcome::kPassthrough; }
  std::string node;
  std::vector<std::string> container_names;            // per slot, init containers first
  std::vector<std::vector<GrantedDevice>> containers;  // per slot
  std::map<std::string, std::string> annotations;      // to write on the pod
  // Why each node refused the pod, when reasons are collected; the extender reports those whose
  // code is not kUnschedulable (preemption cannot help there) as FailedAndUnresolvableNodes.
  std::map<std::string, NodeStatus> failed_nodes;
  std::string message;  // kube-scheduler style, when not scheduled
  state::PodReservation reservation;
};

}  // namespace tessera::sched
