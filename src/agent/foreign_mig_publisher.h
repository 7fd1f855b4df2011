#pragma once

// Tells the scheduler which MIG slices are taken by instances tessera did not create: after
// each reconcile, the node annotation tessera.io/foreign-mig-instances (codec/foreign_mig.h)
// is made to say what the agent knows, and a Node Event ForeignMigInstances records each change
// of the set (docs/agent.md, "Foreign instances").
// - Nothing is forgotten on partial knowledge: a GPU in MIG mode whose listing failed keeps the
//   instances last known on it (at start, those the node's annotation lists).
// - The annotation is compared with what the node carries, not with what was written last: it
//   is read when the set changed and every `verify_interval_ms`, and a deleted or edited value
//   is restored. An empty set deletes the key.
// - A failed read or patch is retried on node::RetryBackoff (1 s, 2 s, ... 5 min), so the caller
//   logs one line per try.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/mig_manager.h"
#include "agent/node_api.h"
#include "core/codec/foreign_mig.h"
#include "core/node/retry_backoff.h"

namespace tessera::agent {

// What one Sync did, for the caller's log.
struct ForeignMigSync {
  bool changed = false;  // the set differs from the last one known
  std::string change;    // the change, in words (also the Event's message); set when changed
  bool patched = false;  // the node's annotation was written (or deleted)
  std::optional<std::string> error;  // reading or patching the node failed
  int64_t retry_in_ms = 0;           // with error: when the next try is due
  int64_t failures = 0;              // with error: failures since the last success
  size_t dropped = 0;  // instances left out of the annotation (over kMaxForeignMigInstances)
};

class ForeignMigPublisher {
 public:
  ForeignMigPublisher(NodeApi& api, int64_t verify_interval_ms);

  // After a reconcile: `report`'s foreign instances and the GPUs it listed; `mig_gpus`, the
  // GPUs registered in MIG mode (only they keep instances through a failed listing). `now_ms`
  // is a monotonic clock. Not thread-safe: the reconcile loop calls it.
  ForeignMigSync Sync(const ReconcileReport& report, const std::set<std::string>& mig_gpus,
                      int64_t now_ms);

  // What the agent knows now, in the annotation's order.
  const std::vector<codec::ForeignMigInstance>& known() const { return known_; }

 private:
  // The node's annotation, decoded; nullopt when the node cannot be read, empty when it has
  // no valid value.
  std::optional<std::vector<codec::ForeignMigInstance>> ReadPublished(const model::Node& node);
  void RecordChange(const std::vector<codec::ForeignMigInstance>& before, ForeignMigSync* out);
  void Publish(int64_t now_ms, ForeignMigSync* out);

  NodeApi& api_;
  int64_t verify_interval_ms_;
  std::vector<codec::ForeignMigInstance> known_;
  bool seeded_ = false;       // known_ started from the node's annotation (or nothing)
  bool unpublished_ = false;  // known_ changed and has not been written yet
  int64_t next_verify_ms_ = 0;
  node::RetryBackoff backoff_;
};

// "GPU-… 1g.10gb at slice 0 (GPU instance 9)": one instance, for messages.
std::string DescribeForeignInstance(const codec::ForeignMigInstance& instance);

}  // namespace tessera::agent
