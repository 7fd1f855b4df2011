#include "core/node/mig_realize.h"

#include <algorithm>

namespace tessera::node {

namespace {

std::string At(const model::Placement& p) {
  return std::to_string(p.start) + ":" + std::to_string(p.size);
}

// The other live pod that claims exactly this instance, if any.
const PodMigClaim* OtherClaimant(const NodeClaims& node, const std::string& uid,
                                 const DriverMigInstance& instance) {
  for (const auto& c : node.claims) {
    if (c.uid == uid) continue;
    for (const auto& a : c.allocations) {
      if (Matches(instance, a)) return &c;
    }
  }
  return nullptr;
}

}  // namespace

std::string DescribeAllocation(const PodMigClaim& claim, const codec::MigAllocation& a) {
  return "pod " + claim.pod + " container " + std::to_string(a.container_index) + " device " +
         std::to_string(a.device_index) + ": " + a.profile + " at " + At(a.placement) + " on " +
         a.gpu_uuid;
}

Result<std::vector<codec::MigAllocation>> ContainerAllocations(const PodMigClaim& claim,
                                                               int container_index) {
  std::vector<codec::MigAllocation> out;
  for (const auto& a : claim.allocations) {
    if (a.container_index == container_index) out.push_back(a);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.device_index < b.device_index; });
  if (out.empty()) {
    return Error{"pod " + claim.pod + " container " + std::to_string(container_index) +
                 ": hami.io/vgpu-mig-allocations has no entry for it"};
  }
  return out;
}

Result<RealizePlan> PlanRealize(const RealizeInput& input) {
  const PodMigClaim& claim = *input.claim;
  const auto& allocs = input.allocations;
  static const std::vector<DriverMigInstance> kNone;
  RealizePlan plan;
  plan.reuse.assign(allocs.size(), false);
  plan.reused.resize(allocs.size());
  for (size_t i = 0; i < allocs.size(); ++i) {
    const auto& a = allocs[i];
    auto listed = input.instances_by_gpu.find(a.gpu_uuid);
    const auto& on_gpu = listed == input.instances_by_gpu.end() ? kNone : listed->second;
    auto same = std::find_if(on_gpu.begin(), on_gpu.end(),
                             [&](const auto& inst) { return Matches(inst, a); });
    if (same != on_gpu.end()) {
      if (const auto* other = OtherClaimant(*input.node, claim.uid, *same)) {
        return Error{DescribeAllocation(claim, a) + ": the instance there is held by pod " +
                     other->pod};
      }
      // Ownership is proven by the ledger, never by the placement: an instance made by an
      // operator or another tool at this pod's placement is not taken over.
      const LedgerEntry* owner = OwningEntry(*input.ledger, *same);
      if (owner == nullptr) {
        return Error{DescribeAllocation(claim, a) +
                     ": an instance tessera did not create is there (GPU instance " +
                     std::to_string(same->gpu_instance_id) + ")"};
      }
      if (owner->pod_uid != claim.uid) {
        // An ended pod left it and the reconciler has not reclaimed it yet: a new pod gets a
        // fresh instance (and MIG UUID), never the old one.
        plan.replace.push_back(*same);
        plan.create.push_back(i);
        continue;
      }
      plan.reuse[i] = true;  // this pod's own: a retried Allocate, or made before a crash
      plan.reused[i] = *same;
      if (!same->has_compute_instance) plan.finish.push_back(i);
      continue;
    }
    for (const auto& inst : on_gpu) {
      if (inst.placement.Overlaps(a.placement)) {
        const auto* other = OtherClaimant(*input.node, claim.uid, inst);
        return Error{DescribeAllocation(claim, a) + ": the slices are taken by " + inst.profile +
                     " at " + At(inst.placement) +
                     (other != nullptr ? " of pod " + other->pod : " (not created for this pod)")};
      }
    }
    for (size_t j = 0; j < i; ++j) {
      if (allocs[j].gpu_uuid == a.gpu_uuid && allocs[j].placement.Overlaps(a.placement)) {
        return Error{DescribeAllocation(claim, a) + ": overlaps device " +
                     std::to_string(allocs[j].device_index) + " of the same container"};
      }
    }
    plan.create.push_back(i);
  }
  return plan;
}

}  // namespace tessera::node
