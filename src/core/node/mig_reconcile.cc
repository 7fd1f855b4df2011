#include "core/node/mig_reconcile.h"

#include <algorithm>

namespace tessera::node {

namespace {

bool SameKey(const DriverMigInstance& i, const LedgerEntry& e) {
  return i.gpu_uuid == e.gpu_uuid && i.profile == e.profile && i.placement == e.placement;
}

std::string Describe(const DriverMigInstance& i) {
  return i.gpu_uuid + " " + i.profile + " at " + std::to_string(i.placement.start) + ":" +
         std::to_string(i.placement.size) + " (GPU instance " + std::to_string(i.gpu_instance_id) +
         ")";
}

}  // namespace

bool Matches(const DriverMigInstance& instance, const codec::MigAllocation& allocation) {
  return instance.gpu_uuid == allocation.gpu_uuid && instance.profile == allocation.profile &&
         instance.placement == allocation.placement;
}

LedgerEntry EntryFor(const PodMigClaim& claim, const codec::MigAllocation& allocation,
                     const DriverMigInstance& instance, bool created) {
  LedgerEntry e;
  e.gpu_uuid = allocation.gpu_uuid;
  e.profile = allocation.profile;
  e.placement = allocation.placement;
  e.pod = claim.pod;
  e.pod_uid = claim.uid;
  e.container_index = allocation.container_index;
  e.device_index = allocation.device_index;
  e.created = created;
  e.gpu_instance_id = instance.gpu_instance_id;
  e.mig_uuid = instance.mig_uuid;
  return e;
}

ReconcilePlan PlanReconcile(const ReconcileInput& input) {
  ReconcilePlan plan;
  static const NodeClaims kNone;
  const NodeClaims& claims = input.claims != nullptr ? *input.claims : kNone;
  std::vector<bool> claimed(input.actual.size(), false);
  auto ledger_entry = [&](const DriverMigInstance& inst) {
    return std::find_if(input.ledger.begin(), input.ledger.end(),
                        [&](const auto& e) { return SameKey(inst, e); });
  };

  for (const auto& claim : claims.claims) {
    for (const auto& alloc : claim.allocations) {
      auto it = std::find_if(input.actual.begin(), input.actual.end(),
                             [&](const auto& inst) { return Matches(inst, alloc); });
      if (it == input.actual.end()) {
        for (const auto& inst : input.actual) {
          if (inst.gpu_uuid == alloc.gpu_uuid && inst.placement.Overlaps(alloc.placement)) {
            plan.conflicts.push_back(claim.pod + ": " + alloc.profile + " at " +
                                     std::to_string(alloc.placement.start) + " on " +
                                     alloc.gpu_uuid + " is blocked by " + Describe(inst));
          }
        }
        continue;
      }
      const size_t idx = static_cast<size_t>(it - input.actual.begin());
      // The ledger says whose it is: an instance a pod that ended left at a placement a new pod
      // now claims is the old pod's, not the new one's (the new pod gets a fresh instance).
      auto owner = ledger_entry(*it);
      if (owner != input.ledger.end() && !owner->pod_uid.empty() && owner->pod_uid != claim.uid) {
        const bool owner_lives =
            std::any_of(claims.claims.begin(), claims.claims.end(), [&](const auto& c) {
              return c.uid == owner->pod_uid &&
                     std::any_of(c.allocations.begin(), c.allocations.end(),
                                 [&](const auto& a) { return Matches(*it, a); });
            });
        if (owner_lives) {
          plan.conflicts.push_back(claim.pod + ": " + Describe(*it) + " is held by pod " +
                                   owner->pod);
        }
        continue;
      }
      if (claimed[idx]) {
        plan.conflicts.push_back(claim.pod + ": " + Describe(*it) +
                                 " is claimed by another pod as well");
        continue;
      }
      claimed[idx] = true;
      plan.keep.push_back(Adoption{*it, EntryFor(claim, alloc, *it, true)});
      if (!it->has_compute_instance) plan.finish.push_back(*it);
    }
  }

  const std::set<std::string> held_gpus(claims.unreadable_gpus.begin(),
                                        claims.unreadable_gpus.end());
  for (size_t i = 0; i < input.actual.size(); ++i) {
    if (claimed[i]) continue;
    const DriverMigInstance& inst = input.actual[i];
    auto entry = ledger_entry(inst);
    const bool ours = entry != input.ledger.end();
    if (!ours && !input.reclaim_foreign) {
      plan.left_alone.push_back(inst);
      continue;
    }
    const bool safe = input.pods_synced && held_gpus.count(inst.gpu_uuid) == 0 &&
                      (!ours || entry->written_ms < input.pods_seen_ms);
    (safe ? plan.destroy : plan.protected_).push_back(inst);
  }

  for (const auto& e : input.ledger) {
    bool exists = std::any_of(input.actual.begin(), input.actual.end(),
                              [&](const auto& inst) { return SameKey(inst, e); });
    if (!exists) plan.forget.push_back(e);
  }
  return plan;
}

}  // namespace tessera::node
