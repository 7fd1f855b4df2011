#pragma once

// Which MIG instances the pods bound to a node hold, read from their
// hami.io/vgpu-mig-allocations. A pod holds its instances until it is terminal (Succeeded or
// Failed) or gone: a terminating pod's containers may still run (hami-node.md W3).

#include <string>
#include <vector>

#include "core/codec/mig_allocations.h"
#include "core/model/pod.h"

namespace tessera::node {

struct PodMigClaim {
  std::string pod;  // namespace/name
  std::string uid;
  std::vector<codec::MigAllocation> allocations;
};

struct NodeClaims {
  std::vector<PodMigClaim> claims;  // pods that hold instances, in pod order
  // Pods whose annotation cannot be read. Their GPUs' instances are never destroyed while such
  // a pod lives (fail closed), and each is reported once by the agent.
  std::vector<std::string> unreadable_gpus;
  std::vector<std::string> problems;  // "<pod>: <message>"
};

// Claims of the pods bound to `node_name` that are not terminal.
NodeClaims ClaimsOnNode(const std::vector<model::Pod>& pods, const std::string& node_name);

}  // namespace tessera::node
