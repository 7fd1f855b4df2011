#pragma once

// Owns the lifecycle of the MIG instances on one node: Realize (called by Allocate) creates a
// container's instances at exactly the reserved placements; Reconcile (periodic, and at start)
// confirms, finishes, destroys and recreates by core/node/mig_reconcile.h's rules. Only the ledger
// proves an instance tessera's, and an entry leaves it only when its instance is provably gone.
// Both run under one mutex, so a reconcile never sees half of an Allocate (hami-node.md W2), and
// there is one manager per process for its whole life (W1).

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "agent/ledger_file.h"
#include "core/codec/mig_allocations.h"
#include "core/node/gpu_driver.h"
#include "core/node/mig_claims.h"
#include "core/node/mig_reconcile.h"

namespace tessera::agent {

struct RealizedInstance {
  codec::MigAllocation allocation;  // with runtime identity filled in
  bool created = false;             // false: an existing instance was reused
};

// A live pod's instance, gone after a reboot, GPU reset or driver reload, made again.
struct RecreatedInstance {
  std::string pod;  // namespace/name
  std::string pod_uid;
  codec::MigAllocation allocation;  // with the new instance's runtime identity
  std::string previous_mig_uuid;    // the one the pod (and the kubelet) were handed; may be ""
  std::string message;              // for the pod's Event
};

struct ReconcileReport {
  int kept = 0;
  int adopted = 0;  // made before a crash: confirmed from the intent written before them
  int finished = 0;
  int destroyed = 0;
  int forgotten = 0;
  int left_alone = 0;
  int protected_count = 0;
  std::vector<std::string> errors;     // driver and ledger errors; the pass went on
  std::vector<std::string> conflicts;  // claims another instance of tessera's blocks
  // Instances tessera did not create, left on the GPUs; they occupy their slices.
  std::vector<node::DriverMigInstance> foreign;
  // The GPUs whose listing completed this pass: `foreign` is complete for them only (what was
  // known of the others still holds, ForeignMigPublisher).
  std::set<std::string> listed_gpus;
  std::vector<node::ForeignAtClaim> foreign_at_claims;  // live pods' placements they block
  std::vector<std::string> awaiting_fresher_view;       // destroys held back, one stable line each
  // Pods ("namespace/name") a read from the API server proved gone while the pod view could
  // not: their entries were released this pass.
  std::vector<std::string> proven_gone;
  std::vector<RecreatedInstance> recreated;  // live pods' lost instances, made again
  // Live pods' lost instances that could not be made again (slices taken, driver error), one
  // stable message each; retried every pass while their pods live.
  std::vector<node::LostInstance> lost;
  // Claimed instances whose runtime identity differs from the pod's annotation: pod -> the
  // allocations to record.
  std::map<std::string, std::vector<codec::MigAllocation>> identities;
};

// What reads of pods from the API server proved (node::ReadProvesGone).
struct GoneProofs {
  std::set<std::string> gone_uids;  // pods proven gone for good
  std::vector<std::string> errors;  // reads that failed: they prove nothing
};
// Reads each pod (once) from the API server: the pods whose entries wait only on a fresher pod
// view (node::ReconcilePlan::awaiting_proof).
using ProveGone = std::function<GoneProofs(const std::vector<node::PodRef>& pods)>;

struct ReconcileOptions {
  int64_t grace_ms = 0;  // how far a fresh pod view may still lag a change (watch latency)
  bool reclaim_foreign = false;
  // The oldest pod view a lost instance is recreated from (clock minus freshness).
  int64_t recreate_max_view_age_ms = node::kRecreateMaxViewAgeMs;
  // Empty: entries wait for a fresher view. Set: called, outside the manager's lock, when the
  // plan holds entries back only for the view's freshness; the pass then plans again on the
  // GPUs and ledger as they are by then, with the proofs.
  ProveGone prove_gone = nullptr;
};

class MigManager {
 public:
  using Clock = std::function<int64_t()>;  // milliseconds, monotonic across restarts not needed
  MigManager(node::GpuDriver& driver, LedgerFile ledger, Clock now_ms);

  // Loads the ledger. Until it succeeds the manager refuses to act.
  Status Start();
  // The GPUs in MIG mode that the manager looks after.
  void SetMigGpus(std::vector<std::string> gpu_uuids);

  // Realizes the instances of one allocation slot (container) of `claim`. `node` is every live
  // claim on the node, to refuse placements another pod holds. All or nothing: on failure the
  // instances created by this call are destroyed again; the error names pod, container, GPU,
  // profile and placement.
  Result<std::vector<RealizedInstance>> Realize(const node::PodMigClaim& claim, int container_index,
                                                const node::NodeClaims& node);

  // Lists every MIG GPU and every GPU the ledger names, and acts on core/node/mig_reconcile.h's
  // plan. `view` is the pod view `claims` were read from, with its provable freshness; entries
  // it is not fresh enough for wait, or are released by options.prove_gone's proofs.
  ReconcileReport Reconcile(const node::NodeClaims& claims, const node::PodViewFreshness& view,
                            const ReconcileOptions& options = {});

  std::vector<node::LedgerEntry> LedgerSnapshot() const;
  // The instances tessera did not create, as the last reconcile found them.
  std::vector<node::DriverMigInstance> ForeignInstances() const;
  uint64_t instances_created() const { return created_.load(); }
  uint64_t instances_destroyed() const { return destroyed_.load(); }

 private:
  Status SaveLedger();
  node::DriverResult<std::vector<node::DriverMigInstance>> Instances(const std::string& gpu);
  void Rollback(const std::vector<node::DriverMigInstance>& created, std::string* why);
  // Makes a live pod's lost instance again at its placement, intent first.
  void Recreate(const node::LostInstance& lost, ReconcileReport* report);

  node::GpuDriver& driver_;
  LedgerFile ledger_file_;
  Clock now_ms_;
  mutable std::mutex mu_;
  bool started_ = false;
  std::vector<std::string> mig_gpus_;
  std::vector<node::LedgerEntry> ledger_;
  std::vector<node::DriverMigInstance> foreign_;
  std::atomic<uint64_t> created_{0};
  std::atomic<uint64_t> destroyed_{0};
};

}  // namespace tessera::agent
