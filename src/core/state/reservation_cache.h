#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/common/result.h"
#include "core/model/pod.h"
#include "core/state/cluster_state.h"

namespace tessera::state {

// The life of a pod's devices from the scheduler's decision to the cluster's record of it, in
// one place for every caller (`tessera serve`, `tessera simulate`, the replays):
//
//   assume (filter reserved them) -> bind in flight -> bound (confirmed) -> forget (pod gone)
//
// An assumed reservation that no bind confirms before its deadline expires. Pods seen in the
// cluster (informer events, a scenario's running pods) are adopted by one set of rules
// (Observe). The devices themselves live in ClusterState; this class only tracks which of them
// wait for a bind. Time is passed in (the core reads no clock). Not thread-safe: the caller
// holds its own lock.
class ReservationCache {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // Annotation keys to values (nullopt: remove), as an adapter writes them.
  using AnnotationWrites = std::map<std::string, std::optional<std::string>>;

  ReservationCache(ClusterState& state, std::chrono::milliseconds timeout)
      : state_(state), timeout_(timeout) {}

  // ---- filter -> bind -> bound --------------------------------------------------------------

  // The scheduler reserved `pod`'s devices on `node`: they wait for a bind until now + timeout.
  // `to_write`: annotations the bind still has to write (placement written in bind). Returns the
  // reservation's serial, which later calls name so that they touch only this reservation.
  uint64_t Assume(const model::Pod& pod, const std::string& node, TimePoint now,
                  AnnotationWrites to_write = {});
  // Filter let the pod through without devices (no GPU request): its bind needs no reservation.
  void AssumePassthrough(const std::string& key) { passthrough_.insert(key); }
  // The pass-through pod no longer waits for a bind here (bound already, or forgotten).
  void DropPassthrough(const std::string& key) { passthrough_.erase(key); }

  struct BindTicket {
    bool reserved = false;  // the pod holds devices (false: a pass-through pod)
    uint64_t serial = 0;    // 0 when no bind was waited for (adopted, or pass-through)
    AnnotationWrites to_write;
  };
  // A bind of `key` to `node` starts: expiry leaves its reservation alone from now on.
  // kConflict: the pod holds devices on another node; kNotFound: it holds nothing and was not
  // let through (expired, or never filtered here). Either way it must be filtered again.
  Result<BindTicket> BeginBind(const std::string& key, const std::string& node);
  // The bind with this serial went through: the reservation is the cluster's now.
  void BindDone(const std::string& key, uint64_t serial);
  // Bound at once, without a bind phase (the simulator, the replays): nothing waits for it.
  void Confirm(const std::string& key) { waiting_.erase(key); }
  // A placement a replay's policy made itself, bound at once.
  void Place(PodReservation reservation) {
    Confirm(reservation.key);
    state_.AddPod(std::move(reservation));
  }
  // A write for the reservation with this serial failed: its devices are released, unless a
  // newer reservation of the same pod took its place. Returns whether it released them.
  bool Undo(const std::string& key, uint64_t serial);

  // The pod is gone (deleted, finished, replaced): its devices are free. Returns what it held.
  std::optional<PodReservation> Forget(const std::string& key);

  struct Expired {
    std::string key;
    std::string uid;
    std::string node;
  };
  // Releases every reservation whose deadline passed and whose bind has not started.
  std::vector<Expired> Expire(TimePoint now);

  // ---- adoption -----------------------------------------------------------------------------

  enum class Adoption {
    kGone,         // the pod has finished: whatever it held is forgotten
    kKeptOurs,     // unbound, and our own reservation is newer than what the event carries
    kUnreadable,   // its placement annotations do not decode (Observed::error says why)
    kNoPlacement,  // it carries no placement: it holds nothing (a bound one gave its back)
    kBound,        // bound, with a placement: held as the cluster's
    kUnbound,      // not bound, with a placement (filtered before a restart, or by another
                   // replica): held, and waiting for its bind unless it already held the same
  };
  struct Observed {
    Adoption adoption = Adoption::kNoPlacement;
    // What an earlier pod of the same key held, when it was forgotten (a new uid, or finished).
    std::optional<PodReservation> forgotten;
    // kUnreadable: the decoding error.
    std::string error;
    // A placement that was read but names GPUs it cannot describe (PodReservation::problem):
    // those GPUs are held whole. Empty when the annotations decode fully.
    std::string problem;
    std::vector<std::string> held_gpus;
    // The node the placement names (kBound, kUnbound).
    std::string placed_node;
  };
  // A pod as the cluster shows it: its devices are adopted, kept or forgotten by its phase, its
  // node and its placement annotations. An unchanged placement is not applied again.
  Observed Observe(const model::Pod& pod, TimePoint now);

  // ---- views --------------------------------------------------------------------------------

  size_t awaiting_bind() const { return waiting_.size(); }
  size_t passthrough_pods() const { return passthrough_.size(); }
  bool IsAwaitingBind(const std::string& key) const { return waiting_.count(key) > 0; }
  // How long the oldest reservation has waited for its bind (zero when none does).
  std::chrono::duration<double> OldestWait(TimePoint now) const;

 private:
  struct Waiting {
    uint64_t serial = 0;
    std::string uid;
    std::string node;
    TimePoint made;
    bool binding = false;
    AnnotationWrites to_write;
  };
  uint64_t Hold(const std::string& key, std::string uid, std::string node, TimePoint now,
                AnnotationWrites to_write);

  ClusterState& state_;
  std::chrono::milliseconds timeout_;
  std::map<std::string, Waiting> waiting_;  // by pod key
  std::set<std::string> passthrough_;
  uint64_t next_serial_ = 1;
};

}  // namespace tessera::state
