#include "core/node/mig_reconcile.h"

#include <algorithm>

namespace tessera::node {

namespace {

bool SameKey(const DriverMigInstance& i, const LedgerEntry& e) {
  return i.gpu_uuid == e.gpu_uuid && i.profile == e.profile && i.placement == e.placement;
}

// An intent was written before the driver was asked, so whatever sits at its key may be what
// that call made; a confirmed entry names the GPU instance id the driver gave it and, once it
// had a compute instance, its MIG UUID: after a reboot the driver hands the same GPU instance
// id out again (on the hardware it follows from the placement), but never the same MIG UUID.
// A GPU instance without a compute instance (a destroy interrupted between the two) has no MIG
// UUID to compare, and its id has to do.
bool Proves(const LedgerEntry& e, const DriverMigInstance& i) {
  if (e.lost || !SameKey(i, e)) return false;
  if (!e.created) return true;
  return e.gpu_instance_id == i.gpu_instance_id &&
         (e.mig_uuid.empty() || i.mig_uuid.empty() || e.mig_uuid == i.mig_uuid);
}

std::string At(const model::Placement& p) {
  return std::to_string(p.start) + ":" + std::to_string(p.size);
}

}  // namespace

std::string DescribeInstance(const DriverMigInstance& i) {
  return i.gpu_uuid + " " + i.profile + " at " + At(i.placement) + " (GPU instance " +
         std::to_string(i.gpu_instance_id) + ")";
}

const LedgerEntry* OwningEntry(const std::vector<LedgerEntry>& ledger,
                               const DriverMigInstance& instance) {
  auto it = std::find_if(ledger.begin(), ledger.end(),
                         [&](const auto& e) { return Proves(e, instance); });
  return it == ledger.end() ? nullptr : &*it;
}

bool ReadProvesGone(const std::optional<model::Pod>& read, const std::string& uid) {
  // Without both uids nothing tells the pod from another that took its name.
  if (uid.empty() || (read.has_value() && read->uid.empty())) return false;
  return !read.has_value() || read->uid != uid || read->IsTerminal();
}

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
  // Foreign instances at a live pod's placement: that pod may run on one (a previous agent's
  // lost ledger, HAMi's plugin), so they are not destroyed even when reclaiming.
  std::vector<bool> foreign_at_claim(input.actual.size(), false);

  for (const auto& claim : claims.claims) {
    for (const auto& alloc : claim.allocations) {
      auto it = std::find_if(input.actual.begin(), input.actual.end(),
                             [&](const auto& inst) { return Matches(inst, alloc); });
      if (it == input.actual.end()) {
        for (const auto& inst : input.actual) {
          if (inst.gpu_uuid == alloc.gpu_uuid && inst.placement.Overlaps(alloc.placement)) {
            plan.conflicts.push_back(claim.pod + ": " + alloc.profile + " at " +
                                     std::to_string(alloc.placement.start) + " on " +
                                     alloc.gpu_uuid + " is blocked by " + DescribeInstance(inst));
          }
        }
        continue;
      }
      const size_t idx = static_cast<size_t>(it - input.actual.begin());
      const LedgerEntry* owner = OwningEntry(input.ledger, *it);
      if (owner == nullptr) {
        foreign_at_claim[idx] = true;
        plan.foreign_at_claims.push_back(
            {claim.pod, claim.uid, alloc, *it,
             "pod " + claim.pod + ": " + DescribeInstance(*it) +
                 " was not created by tessera (no ledger entry written before it); the pod's " +
                 alloc.profile + " instance cannot be created at " + At(alloc.placement)});
        continue;
      }
      // The ledger says whose it is: an instance a pod that ended left at a placement a new pod
      // now claims is the old pod's, not the new one's (the new pod gets a fresh instance).
      if (!owner->pod_uid.empty() && owner->pod_uid != claim.uid) {
        const bool owner_lives =
            std::any_of(claims.claims.begin(), claims.claims.end(), [&](const auto& c) {
              return c.uid == owner->pod_uid &&
                     std::any_of(c.allocations.begin(), c.allocations.end(),
                                 [&](const auto& a) { return Matches(*it, a); });
            });
        if (owner_lives) {
          plan.conflicts.push_back(claim.pod + ": " + DescribeInstance(*it) + " is held by pod " +
                                   owner->pod);
        }
        continue;
      }
      if (claimed[idx]) {
        plan.conflicts.push_back(claim.pod + ": " + DescribeInstance(*it) +
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
  // Entries written at or after this are not judged: the view may not include their pods yet.
  const int64_t judged_up_to =
      std::min(input.now_ms, input.pods.fresh_ms) - std::max<int64_t>(0, input.grace_ms);
  // Whether the view, or a read of the pod itself, proves `e`'s pod gone; `e`'s pod is not
  // claimed in the view. Otherwise its pod is named for a read (once).
  auto shown_gone = [&](const LedgerEntry& e) {
    if (e.written_ms < judged_up_to) return true;
    if (!e.pod_uid.empty() && input.pods_proven_gone.count(e.pod_uid) > 0) return true;
    if (!e.pod_uid.empty() && !e.pod.empty()) {
      const PodRef ref{e.pod, e.pod_uid};
      if (std::find(plan.awaiting_proof.begin(), plan.awaiting_proof.end(), ref) ==
          plan.awaiting_proof.end()) {
        plan.awaiting_proof.push_back(ref);
      }
    }
    return false;
  };
  for (size_t i = 0; i < input.actual.size(); ++i) {
    if (claimed[i]) continue;
    const DriverMigInstance& inst = input.actual[i];
    const LedgerEntry* entry = OwningEntry(input.ledger, inst);
    if (entry == nullptr) plan.foreign.push_back(inst);
    if (entry == nullptr && (!input.reclaim_foreign || foreign_at_claim[i])) {
      plan.left_alone.push_back(inst);
      continue;
    }
    if (!input.pods.complete || held_gpus.count(inst.gpu_uuid) > 0) {
      plan.protected_.push_back(inst);
      continue;
    }
    if (entry != nullptr && !shown_gone(*entry)) {
      plan.protected_.push_back(inst);
      plan.awaiting_fresher_view.push_back(
          DescribeInstance(inst) + " of pod " + entry->pod + ": its ledger entry (written at " +
          std::to_string(entry->written_ms) + " ms) is not older by " +
          std::to_string(input.grace_ms) +
          " ms than what the pod view provably holds; not destroyed until a relist, a watch "
          "event or a read of the pod from the API server shows the pod gone");
      continue;
    }
    plan.destroy.push_back(inst);
  }

  // A recreation trusts the view to say the pod still lives: it must be complete and recent.
  const bool view_is_recent =
      input.pods.complete && input.now_ms - input.pods.fresh_ms <= input.recreate_max_view_age_ms;
  for (const auto& e : input.ledger) {
    // Only a complete listing of the entry's GPU shows its instance gone; otherwise the entry is
    // the one record that the instance may exist.
    if (input.listed_gpus.count(e.gpu_uuid) == 0) continue;
    const bool exists = std::any_of(input.actual.begin(), input.actual.end(),
                                    [&](const auto& inst) { return Proves(e, inst); });
    if (exists) continue;
    if (!e.created && !e.lost) {  // an intent whose create never took effect
      plan.forget.push_back(e);
      continue;
    }
    // A confirmed instance is gone: a reboot, a GPU reset or a driver reload. Does its pod
    // still hold the placement?
    const PodMigClaim* owner = nullptr;
    const codec::MigAllocation* held = nullptr;
    for (const auto& c : claims.claims) {
      if (c.uid != e.pod_uid) continue;
      for (const auto& a : c.allocations) {
        if (a.gpu_uuid == e.gpu_uuid && a.profile == e.profile && a.placement == e.placement) {
          owner = &c;
          held = &a;
        }
      }
    }
    if (owner != nullptr && view_is_recent) {
      LostInstance lost{owner->pod, owner->uid, *held, e, ""};
      auto blocker = std::find_if(input.actual.begin(), input.actual.end(), [&](const auto& i) {
        return i.gpu_uuid == e.gpu_uuid && i.placement.Overlaps(e.placement);
      });
      if (blocker == input.actual.end()) {
        plan.recreate.push_back(std::move(lost));
        continue;
      }
      lost.message = "pod " + owner->pod + ": its MIG instance " + e.profile + " at " +
                     At(e.placement) + " on " + e.gpu_uuid +
                     (e.mig_uuid.empty() ? "" : " (" + e.mig_uuid + ")") +
                     " is gone (reboot, GPU reset or driver reload) and cannot be recreated: " +
                     DescribeInstance(*blocker) + " occupies its slices";
      plan.lost.push_back(std::move(lost));
    } else if (owner == nullptr && input.pods.complete && shown_gone(e)) {
      plan.forget.push_back(e);  // a view newer than the entry, or a read, shows its pod gone
      continue;
    }
    // Kept, proving nothing, until the pod is seen gone or its instance is made again.
    if (!e.lost) plan.mark_lost.push_back(e);
  }
  return plan;
}

}  // namespace tessera::node
