#include "core/sched/scheduler.h"

#include "core/codec/mig_allocations.h"
#include "core/codec/pod_devices.h"
#include "core/model/annotations.h"
#include "core/sched/reasons.h"

namespace tessera::sched {
namespace {

namespace ann = model::annotations;

Decision Rejected(Decision d, const std::string& message) {
  d.scheduled = false;
  d.message = message;
  return d;
}

}  // namespace

Decision Scheduler::Evaluate(const model::Pod& pod, const std::vector<std::string>* candidates,
                             int64_t now_unix) const {
  Decision decision;
  // Phase 1: parse the request and the pod's preferences.
  auto request = DerivePodRequest(pod, state_.config().nvidia);
  if (!request.ok()) {
    decision.invalid_request = true;
    return Rejected(std::move(decision), request.error().message);
  }
  decision.container_names = request->names;
  if (!request->HasGpu()) {
    // Not ours: kube-scheduler places it on its own (HAMi's pass-through).
    decision.passthrough = true;
    decision.containers.resize(request->slots.size());
    return decision;
  }
  auto prefs = ParsePreferences(pod, defaults_);
  if (!prefs.ok()) {
    decision.invalid_request = true;
    return Rejected(std::move(decision), prefs.error().message);
  }
  // Phase 2: filter every candidate node; phase 3: score the ones that fit.
  std::vector<const state::NodeState*> nodes;
  if (candidates == nullptr) {
    for (const auto& [name, ns] : state_.nodes()) nodes.push_back(&ns);
  } else {
    for (const auto& name : *candidates) {
      const state::NodeState* ns = state_.node(name);
      if (ns == nullptr) {
        decision.failed_nodes[name] = "node unregistered";
        continue;
      }
      nodes.push_back(ns);
    }
  }
  const int total_nodes = static_cast<int>(nodes.size() + decision.failed_nodes.size());
  const state::NodeState* best = nullptr;
  NodeFit best_fit;
  for (const state::NodeState* ns : nodes) {
    NodeFit fit = FitPodOnNode(*ns, request.value(), prefs.value());
    if (!fit.fits) {
      decision.failed_nodes[ns->name] = fit.reason;
      continue;
    }
    // binpack: fullest node after placement; spread: emptiest. Ties: the first by name.
    bool better = best == nullptr ||
                  (prefs->node_policy == NodePolicy::kBinpack ? fit.score > best_fit.score
                                                               : fit.score < best_fit.score) ||
                  (fit.score == best_fit.score && ns->name < best->name);
    if (better) {
      best = ns;
      best_fit = std::move(fit);
    }
  }
  if (best == nullptr) {
    if (total_nodes == 0) return Rejected(std::move(decision), "0/0 nodes are available.");
    return Rejected(std::move(decision), FormatPodMessage(decision.failed_nodes, total_nodes));
  }
  // Phase 4 (prepared here, applied by Schedule): the reservation and its annotations.
  decision.scheduled = true;
  decision.node = best->name;
  codec::PodDevices pod_devices(best_fit.slots.size());
  std::vector<codec::MigAllocation> mig;
  decision.containers.resize(best_fit.slots.size());
  for (size_t slot = 0; slot < best_fit.slots.size(); ++slot) {
    for (size_t pos = 0; pos < best_fit.slots[slot].size(); ++pos) {
      const DeviceAssignment& a = best_fit.slots[slot][pos];
      const model::GpuDevice& d = best->devices[a.device];
      GrantedDevice g{d.uuid, a.mem, a.cores, "", a.placement};
      if (a.mig_profile >= 0) {
        g.mig_profile = best->mig_models[a.device].profiles()[a.mig_profile].name;
        mig.push_back(codec::MigAllocation{static_cast<int>(slot), static_cast<int>(pos), d.uuid,
                                           g.mig_profile, a.placement, std::nullopt});
      }
      pod_devices[slot].push_back(
          codec::ContainerDevice{d.uuid, std::string(ann::kNvidiaType), a.mem, a.cores});
      decision.containers[slot].push_back(std::move(g));
    }
  }
  const std::string encoded = codec::EncodePodDevices(pod_devices);
  decision.annotations[std::string(ann::kAssignedNode)] = best->name;
  decision.annotations[std::string(ann::kAssignedTime)] = std::to_string(now_unix);
  decision.annotations[std::string(ann::kDevicesToAllocate)] = encoded;
  decision.annotations[std::string(ann::kDevicesAllocated)] = encoded;
  if (std::string m = codec::EncodeMigAllocations(mig); !m.empty()) {
    decision.annotations[std::string(ann::kMigAllocations)] = m;
  }
  decision.reservation = state::PodReservation{pod.Key(),  pod.uid, best->name,
                                               request->num_init, std::move(pod_devices),
                                               std::move(mig)};
  return decision;
}

Decision Scheduler::Schedule(const model::Pod& pod, const std::vector<std::string>* candidates,
                             int64_t now_unix) {
  // A pod filtered again gives up its earlier reservation first (as HAMi does), but gets it back
  // if it now fits nowhere: nothing reserved is lost on an error path.
  std::optional<state::PodReservation> previous = state_.RemovePod(pod.Key());
  Decision decision = Evaluate(pod, candidates, now_unix);
  if (decision.scheduled) {
    state_.AddPod(decision.reservation);
  } else if (previous) {
    state_.AddPod(std::move(*previous));
  }
  return decision;
}

}  // namespace tessera::sched
