#pragma once

// The node agent's reconcile decision, a pure function: given the MIG instances the pods hold
// (claims), the instances the driver reports, and the agent's ledger of instances it created,
// say what to adopt, finish, destroy and leave alone. Rules (docs/agent.md, "Reconciler"):
// - an instance at the exact (GPU, profile, placement) of a live pod's claim is that pod's:
//   kept, adopted into the ledger, finished (compute instance) if half-made; never destroyed;
//   unless the ledger names another pod as its owner: then it is what an ended pod left, and
//   the new pod gets a fresh instance (never a previous tenant's);
// - an instance tessera created (in the ledger) that no live pod claims is destroyed, but only
//   when the pod view is fully synced and was taken after the ledger entry was written (so an
//   Allocate that raced the pod list is never undone, hami-node.md W2);
// - an instance on a GPU named by a pod whose annotation cannot be read is never destroyed;
// - any other instance is not tessera's and is left alone, unless reclaiming is configured.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/node/gpu_driver.h"
#include "core/node/mig_claims.h"

namespace tessera::node {

// One instance tessera created or adopted, as the agent's ledger records it.
struct LedgerEntry {
  std::string gpu_uuid;
  std::string profile;
  model::Placement placement;
  std::string pod;  // namespace/name of the owner
  std::string pod_uid;
  int container_index = 0;
  int device_index = 0;
  bool created = false;  // false: intent written before the driver call (crash window)
  uint32_t gpu_instance_id = 0;
  std::string mig_uuid;
  int64_t written_ms = 0;  // when the entry was last written (agent clock)
  bool operator==(const LedgerEntry&) const = default;
};

struct ReconcileInput {
  const NodeClaims* claims = nullptr;
  std::vector<DriverMigInstance> actual;  // every GPU's instances
  std::vector<LedgerEntry> ledger;
  bool pods_synced = false;  // the pod view is complete (informer synced, no error)
  int64_t pods_seen_ms = 0;  // when that view was taken (agent clock)
  bool reclaim_foreign = false;
};

struct Adoption {
  DriverMigInstance instance;
  LedgerEntry entry;  // the ledger entry to write
};

struct ReconcilePlan {
  std::vector<Adoption> keep;                 // claimed instances, with their ledger entries
  std::vector<DriverMigInstance> finish;      // claimed, but without a compute instance
  std::vector<DriverMigInstance> destroy;     // tessera's (or foreign, when reclaiming), unclaimed
  std::vector<DriverMigInstance> left_alone;  // not tessera's
  std::vector<DriverMigInstance> protected_;  // unclaimed but not yet safe to destroy
  std::vector<LedgerEntry> forget;            // ledger entries whose instance no longer exists
  std::vector<std::string> conflicts;         // a claim that another instance blocks
};

ReconcilePlan PlanReconcile(const ReconcileInput& input);

// The ledger entry of `claim`'s `allocation`, with what the driver reports of `instance`.
LedgerEntry EntryFor(const PodMigClaim& claim, const codec::MigAllocation& allocation,
                     const DriverMigInstance& instance, bool created);

// Whether an instance is at exactly the claimed GPU, profile and placement.
bool Matches(const DriverMigInstance& instance, const codec::MigAllocation& allocation);

}  // namespace tessera::node
