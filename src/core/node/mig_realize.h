#pragma once

// The node agent's Allocate decision for MIG, a pure function beside PlanReconcile: given one
// container's reserved placements, the instances its GPUs hold now, the ledger and every live
// claim on the node, say which instances to reuse, finish, create, and which instances an
// ended pod left at these placements go first — or why the placements cannot be realized. The
// agent (agent/mig_manager.cc) lists the GPUs, writes the intents and acts on the plan. Rules
// (docs/agent.md, "Allocate"):
// - nothing is touched unless every allocation of the container checks out (all or nothing);
// - an instance at the exact placement is reused only when the ledger proves it this pod's
//   (a retried Allocate, or made before a crash); one another live pod claims is refused;
// - one the ledger proves tessera's but another pod's (an ended pod's, not reclaimed yet) is
//   destroyed and made again, so a new pod never gets an old pod's MIG UUID;
// - ownership is never guessed from the placement: an instance tessera did not create there,
//   or any instance overlapping the slices, refuses the placement;
// - two devices of the container may not overlap on one GPU.

#include <map>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/node/mig_claims.h"
#include "core/node/mig_reconcile.h"

namespace tessera::node {

// The allocations of one container (allocation slot) of `claim`, by device index; an error
// naming pod and container when the annotation has none for it.
Result<std::vector<codec::MigAllocation>> ContainerAllocations(const PodMigClaim& claim,
                                                               int container_index);

struct RealizeInput {
  const PodMigClaim* claim = nullptr;
  std::vector<codec::MigAllocation> allocations;  // ContainerAllocations(claim, container)
  // The instances on each GPU the allocations name, from a listing that succeeded.
  std::map<std::string, std::vector<DriverMigInstance>> instances_by_gpu;
  const std::vector<LedgerEntry>* ledger = nullptr;
  const NodeClaims* node = nullptr;  // every live claim on the node
};

struct RealizePlan {
  // Per allocation (same order): the instance reused (reuse[i]), or none to create.
  std::vector<bool> reuse;
  std::vector<DriverMigInstance> reused;  // reused[i] is meaningful where reuse[i]
  std::vector<size_t> create;             // allocation indexes to create, in order
  std::vector<size_t> finish;             // reused ones without a compute instance
  // Instances of tessera's that ended pods left at these placements: destroyed first.
  std::vector<DriverMigInstance> replace;
};

// The plan, or an error naming pod, container, device, profile, placement and GPU, and what
// blocks it.
Result<RealizePlan> PlanRealize(const RealizeInput& input);

// "pod ns/name container 0 device 1: 1g.10gb at 0:1 on GPU-x", the start of every message.
std::string DescribeAllocation(const PodMigClaim& claim, const codec::MigAllocation& allocation);

}  // namespace tessera::node
