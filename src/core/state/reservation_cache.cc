#include "core/state/reservation_cache.h"

#include <algorithm>
#include <utility>

#include "core/model/annotations.h"

namespace tessera::state {

uint64_t ReservationCache::Hold(const std::string& key, std::string uid, std::string node,
                                TimePoint now, AnnotationWrites to_write) {
  Waiting w;
  w.serial = next_serial_++;
  w.uid = std::move(uid);
  w.node = std::move(node);
  w.made = now;
  w.to_write = std::move(to_write);
  const uint64_t serial = w.serial;
  waiting_[key] = std::move(w);  // a pod filtered again replaces its earlier hold
  return serial;
}

uint64_t ReservationCache::Assume(const model::Pod& pod, const std::string& node, TimePoint now,
                                  AnnotationWrites to_write) {
  return Hold(pod.Key(), pod.uid, node, now, std::move(to_write));
}

Result<ReservationCache::BindTicket> ReservationCache::BeginBind(const std::string& key,
                                                                 const std::string& node) {
  const PodReservation* held = state_.pod(key);
  if (held != nullptr && held->node != node) {
    return Error{"pod " + key + " holds devices on node " + held->node + ", not on " + node +
                     "; it must be filtered again",
                 ErrorCode::kConflict};
  }
  BindTicket ticket;
  ticket.reserved = held != nullptr;
  if (auto it = waiting_.find(key); it != waiting_.end()) {
    it->second.binding = true;  // expiry must not release it while the bind is in flight
    ticket.serial = it->second.serial;
    ticket.to_write = it->second.to_write;
  }
  if (!ticket.reserved && passthrough_.erase(key) == 0) {
    return Error{"pod " + key +
                     " holds no reservation (it expired, or the pod was never filtered by this "
                     "replica); it must be filtered again",
                 ErrorCode::kNotFound};
  }
  return ticket;
}

void ReservationCache::BindDone(const std::string& key, uint64_t serial) {
  auto it = waiting_.find(key);
  if (it != waiting_.end() && it->second.serial == serial) waiting_.erase(it);
}

bool ReservationCache::Undo(const std::string& key, uint64_t serial) {
  auto it = waiting_.find(key);
  if (it == waiting_.end() || it->second.serial != serial) return false;
  waiting_.erase(it);
  state_.RemovePod(key);
  return true;
}

std::optional<PodReservation> ReservationCache::Forget(const std::string& key) {
  waiting_.erase(key);
  passthrough_.erase(key);
  return state_.RemovePod(key);
}

std::vector<ReservationCache::Expired> ReservationCache::Expire(TimePoint now) {
  std::vector<Expired> expired;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (!it->second.binding && it->second.made + timeout_ <= now) {
      expired.push_back(Expired{it->first, it->second.uid, it->second.node});
      state_.RemovePod(it->first);
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  return expired;
}

ReservationCache::Observed ReservationCache::Observe(const model::Pod& pod, TimePoint now) {
  Observed out;
  const std::string key = pod.Key();
  const PodReservation* held = state_.pod(key);
  // Same name, new pod (a StatefulSet replica): the old one's devices are free.
  if (held != nullptr && !held->uid.empty() && !pod.uid.empty() && held->uid != pod.uid) {
    out.forgotten = Forget(key);
    held = nullptr;
  }
  if (pod.IsTerminal()) {
    if (auto gone = Forget(key)) out.forgotten = std::move(gone);
    out.adoption = Adoption::kGone;
    return out;
  }
  auto waiting = waiting_.find(key);
  if (waiting != waiting_.end() && pod.node_name.empty()) {
    // Our own reservation is newer than whatever annotations this (possibly older) event carries.
    out.adoption = Adoption::kKeptOurs;
    return out;
  }
  auto reservation = ClusterState::ReservationFromAnnotations(pod);
  if (!reservation.ok()) {
    out.adoption = Adoption::kUnreadable;
    out.error = reservation.error().message;
    return out;
  }
  if (!reservation.value()) {
    // A bound pod without a placement holds no GPU; an unbound one may still be filtered.
    if (held != nullptr && !pod.node_name.empty()) out.forgotten = Forget(key);
    out.adoption = Adoption::kNoPlacement;
    return out;
  }
  PodReservation r = std::move(*reservation.value());
  out.problem = r.problem;
  if (!r.problem.empty()) out.held_gpus = r.held_gpus;
  out.placed_node = r.node;
  if (waiting != waiting_.end()) waiting_.erase(waiting);  // bound: confirmed
  const bool same = held != nullptr && held->node == r.node && held->devices == r.devices &&
                    held->mig == r.mig && held->held_gpus == r.held_gpus &&
                    held->priority == r.priority && held->labels == r.labels;
  if (!same) state_.AddPod(std::move(r));
  if (!pod.node_name.empty()) {
    out.adoption = Adoption::kBound;
    return out;
  }
  out.adoption = Adoption::kUnbound;
  if (!same && waiting_.count(key) == 0) {
    // Placed by filter (this process before a restart, or another replica) and not bound yet:
    // hold it until it is bound or the reservation times out.
    const std::string* assigned = pod.Annotation(std::string(model::annotations::kAssignedNode));
    Hold(key, pod.uid, assigned != nullptr ? *assigned : "", now, {});
  }
  return out;
}

std::chrono::duration<double> ReservationCache::OldestWait(TimePoint now) const {
  std::chrono::duration<double> oldest{0};
  for (const auto& [key, w] : waiting_) {
    oldest = std::max(oldest, std::chrono::duration<double>(now - w.made));
  }
  return oldest;
}

}  // namespace tessera::state
