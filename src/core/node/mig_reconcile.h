#pragma once

// The node agent's reconcile decision, a pure function: given the MIG instances the pods hold
// (claims), the instances the driver reports for the GPUs it could list, the agent's ledger of
// instances it created, and how fresh the pod view provably is, say what to keep, finish,
// destroy, forget and leave alone. Rules (docs/agent.md, "Reconcile"):
// - ownership is proven, never guessed: an instance is tessera's only when a ledger entry for
//   it was written before it was created (an intent, or the record of this very GPU instance:
//   its id and MIG UUID, since ids are handed out again after a reboot).
//   A placement match with a pod's claim proves nothing: an instance made by an operator or
//   another tool at a pod's reserved placement is foreign, left alone and reported, and the
//   pod's instance cannot be made there;
// - an instance of tessera's at the exact (GPU, profile, placement) of its owner's claim is
//   kept, its entry confirmed, finished (compute instance) if half-made; an instance whose
//   entry names another pod is what an ended pod left, and the new pod gets a fresh one;
// - an instance of tessera's that no live pod claims is destroyed, but only when the pod view
//   is complete and provably newer than the ledger entry: the entry must be older than both
//   the view's freshness (the last relist or watch event the view includes) and the clock, by
//   the grace period (the watch latency), so neither an Allocate that raced the pod list (W2)
//   nor a watch that silently stopped can undo a live pod's instance. When the view is the only
//   thing missing, the plan names the entry's pod (awaiting_proof), and a read of that pod from
//   the API server that proves it gone for good (ReadProvesGone) stands in for the fresher view;
// - an instance on a GPU named by a pod whose annotation cannot be read is never destroyed;
// - a ledger entry is forgotten only when a complete listing of its GPU shows its instance
//   gone; a GPU that could not be listed keeps every entry (a destroy removes its own entry);
// - a live pod's instance that a complete listing shows gone (a reboot, a GPU reset or a
//   driver reload wipes every instance) is recreated at the same placement, but only when the
//   pod view is complete and recent (a stale view may still show a pod that ended) and nothing
//   sits on its slices; otherwise the entry is kept as a lost record, which proves nothing, and
//   the pod is reported while its slices are taken. It is forgotten once a view newer than the
//   entry, or a read proving its pod gone, shows its pod gone;
// - any instance that is not tessera's is left alone, unless reclaiming is configured and no
//   live pod claims its placement.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/node/gpu_driver.h"
#include "core/node/mig_claims.h"

namespace tessera::node {

// One instance tessera created or is creating, as the agent's ledger records it.
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
  // Its instance vanished (reboot, GPU reset, driver reload) while its pod may still live: the
  // record that the pod held this placement, so it can be recreated. It proves nothing: after
  // a reboot the driver hands out the same GPU instance ids again, to anyone.
  bool lost = false;
  bool operator==(const LedgerEntry&) const = default;
};

// How old (clock minus freshness) a pod view may be for a recreation: a pod that ended since
// could still be in it. A healthy watch delivers a bookmark about every minute and a silent
// one is restarted after two (kube_node_api.cc), so a view older than 150 s is behind a watch
// that has not been restarted yet.
inline constexpr int64_t kRecreateMaxViewAgeMs = 150'000;

// The pod view a reconcile judges by.
struct PodViewFreshness {
  bool complete = false;  // every pod on the node (informer synced, or listed), no error
  int64_t fresh_ms = 0;   // every pod change made before this time (agent clock) is in the view
};

// A pod an entry names: "namespace/name" and its uid.
struct PodRef {
  std::string pod;
  std::string uid;
  bool operator==(const PodRef&) const = default;
};

struct ReconcileInput {
  const NodeClaims* claims = nullptr;
  std::vector<DriverMigInstance> actual;  // the instances of the GPUs in `listed_gpus`
  std::set<std::string> listed_gpus;      // GPUs whose listing completed without an error
  std::vector<LedgerEntry> ledger;
  PodViewFreshness pods;
  int64_t now_ms = 0;    // agent clock
  int64_t grace_ms = 0;  // how far a fresh view may still lag a change (watch latency)
  int64_t recreate_max_view_age_ms = kRecreateMaxViewAgeMs;
  bool reclaim_foreign = false;
  // Uids of pods that a read from the API server, made after their entries were written,
  // proved gone for good (ReadProvesGone). A uid is never given again, so such a proof never
  // expires; it releases the entries of that pod that wait only on the view's freshness.
  std::set<std::string> pods_proven_gone;
};

struct Adoption {
  DriverMigInstance instance;
  LedgerEntry entry;  // the ledger entry to write
};

// A live pod's claim at whose placement sits an instance tessera did not create.
struct ForeignAtClaim {
  std::string pod;  // namespace/name
  std::string pod_uid;
  codec::MigAllocation allocation;
  DriverMigInstance instance;
  std::string message;
};

// A live pod's instance that a complete listing of its GPU shows gone.
struct LostInstance {
  std::string pod;  // namespace/name
  std::string pod_uid;
  codec::MigAllocation allocation;  // as the pod records it: `runtime` is what it was handed
  LedgerEntry entry;                // the pod's ledger entry for it
  std::string message;              // why it cannot be recreated (ReconcilePlan::lost)
};

struct ReconcilePlan {
  std::vector<Adoption> keep;                 // claimed instances of tessera's, with their entries
  std::vector<DriverMigInstance> finish;      // kept, but without a compute instance
  std::vector<DriverMigInstance> destroy;     // tessera's (or foreign, when reclaiming), unclaimed
  std::vector<DriverMigInstance> left_alone;  // not tessera's
  std::vector<DriverMigInstance> protected_;  // unclaimed but not yet safe to destroy
  // Of protected_: tessera's, unclaimed, but the pod view is not provably newer than their
  // entries; destroyed once it is. One line each says why.
  std::vector<std::string> awaiting_fresher_view;
  // The pods whose entries wait only on the view's freshness (those of awaiting_fresher_view,
  // and lost records of pods the view does not show), each once, in ledger order: a read
  // that proves one gone (ReconcileInput::pods_proven_gone) releases them. Entries without a
  // pod uid cannot be proven gone by a read and are not named.
  std::vector<PodRef> awaiting_proof;
  std::vector<LedgerEntry> forget;         // entries whose instance a complete listing shows gone
  std::vector<std::string> conflicts;      // a claim that another instance of tessera's blocks
  std::vector<DriverMigInstance> foreign;  // every listed instance that is not tessera's
  std::vector<ForeignAtClaim> foreign_at_claims;  // claims a foreign instance blocks
  // Live pods' instances gone from a complete listing, to be made again at their placements
  // (intent first). Their entries are neither forgotten nor marked lost here.
  std::vector<LostInstance> recreate;
  // Live pods' instances gone whose slices something else now occupies: reported, not made.
  std::vector<LostInstance> lost;
  // Entries whose instance is gone but whose pod may live: kept as lost records.
  std::vector<LedgerEntry> mark_lost;
};

ReconcilePlan PlanReconcile(const ReconcileInput& input);

// Whether a read of pod `uid`'s namespace/name from the API server (a quorum read, made after
// the pod's entries were written) proves that pod gone for good: no pod has the name (nullopt:
// NotFound), another pod has it (another uid: names are unique, uids never reused), or the pod
// is Succeeded or Failed (final phases, and a terminal pod holds nothing). A pod that still
// runs, or is being deleted (its containers may still run), proves nothing.
bool ReadProvesGone(const std::optional<model::Pod>& read, const std::string& uid);

// The ledger entry proving tessera created `instance`: same GPU, profile and placement, and
// either an intent (written before the driver was asked) or the record of this GPU instance id
// and, when it recorded one, this MIG UUID; never a lost record.
// nullptr: the instance is not tessera's, whatever sits at its placement.
const LedgerEntry* OwningEntry(const std::vector<LedgerEntry>& ledger,
                               const DriverMigInstance& instance);
// The answer points into `ledger`: a temporary one would leave it dangling.
const LedgerEntry* OwningEntry(std::vector<LedgerEntry>&& ledger,
                               const DriverMigInstance& instance) = delete;

// The ledger entry of `claim`'s `allocation`, with what the driver reports of `instance`.
LedgerEntry EntryFor(const PodMigClaim& claim, const codec::MigAllocation& allocation,
                     const DriverMigInstance& instance, bool created);

// Whether an instance is at exactly the claimed GPU, profile and placement.
bool Matches(const DriverMigInstance& instance, const codec::MigAllocation& allocation);

// "GPU-x 1g.24gb at 9:3 (GPU instance 2)", for messages.
std::string DescribeInstance(const DriverMigInstance& instance);

}  // namespace tessera::node
