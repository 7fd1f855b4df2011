#include "core/sched/scheduler.h"

#include <cmath>
#include <unordered_map>

#include "core/codec/mig_allocations.h"
#include "core/codec/pod_devices.h"
#include "core/common/strings.h"
#include "core/model/annotations.h"
#include "core/sched/node_scoring.h"
#include "core/sched/reasons.h"

namespace tessera::sched {
namespace {

namespace ann = model::annotations;

Decision Rejected(Decision d, const std::string& message) {
  d.scheduled = false;
  d.message = message;
  return d;
}

// Fragmentation deltas are compared in steps of 4% of a GPU (FGD's integer scores have about
// this resolution near zero; measured in docs/replay.md).
constexpr double kFragmentationQuantum = 0.04;

template <class E>
bool Better(const E& candidate, const E& best, const std::string& candidate_name,
            const std::string& best_name, NodePolicy policy, bool by_fragmentation) {
  if (by_fragmentation) {
    // Expected fragmentation is an estimate: differences below a quantum (a small share of one
    // GPU) are noise, and chasing them scatters pods; binpack decides among equals.
    const double a = std::floor(candidate.frag_delta / kFragmentationQuantum);
    const double b = std::floor(best.frag_delta / kFragmentationQuantum);
    if (a != b) return a < b;
  }
  // binpack: fullest node after placement; spread: emptiest. Ties: the first by name.
  if (candidate.fit.score != best.fit.score) {
    return policy == NodePolicy::kBinpack ? candidate.fit.score > best.fit.score
                                          : candidate.fit.score < best.fit.score;
  }
  return candidate_name < best_name;
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
    nodes = state_.node_list();
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
  const int64_t cpu_milli = model::PodCpuRequestMilli(pod);
  const std::vector<WeightedShape>& target = mix_.Target();
  const bool by_fragmentation = defaults_.fragmentation_aware &&
                                prefs->node_policy == NodePolicy::kBinpack && !target.empty();
  // A pod asking one shared GPU also chooses its GPU by fragmentation (FGD's GPU choice).
  const ContainerRequest* single = nullptr;
  for (size_t i = 0; i < request->slots.size(); ++i) {
    if (request->slots[i].Empty()) continue;
    single = single == nullptr && request->slots[i].nums == 1 ? &request->slots[i] : nullptr;
    if (single == nullptr) break;
  }
  const bool rank_gpus =
      by_fragmentation && single != nullptr && prefs->vgpu_mode.value_or("hami-core") != "mig";

  // Nodes in the same state give the same answer; evaluate each state once (an equivalence
  // cache, as kube-scheduler once had). Not used when the answer depends on GPU UUIDs.
  const bool cacheable = prefs->use_uuids.empty() && prefs->nouse_uuids.empty();
  struct Evaluated {
    const state::NodeState* representative;
    NodeFit fit;
    double frag_delta;
  };
  std::vector<Evaluated> evaluated;
  evaluated.reserve(nodes.size());  // pointers into it stay valid
  std::unordered_multimap<uint64_t, size_t> by_signature;

  // Why each node failed; written out only when no node fits (kube-scheduler needs the reasons
  // then, and building 5000 strings per successful decision would dominate its cost).
  std::vector<std::pair<const state::NodeState*, const std::string*>> failures;
  const state::NodeState* best = nullptr;
  const Evaluated* best_eval = nullptr;
  for (const state::NodeState* ns : nodes) {
    if (!ns->usable()) {
      failures.emplace_back(ns, &ns->unusable_reason);
      continue;
    }
    const Evaluated* result = nullptr;
    const bool use_cache = cacheable && ns->pair_scores.empty();
    uint64_t signature = 0;
    if (use_cache) {
      signature = ns->signature;
      auto range = by_signature.equal_range(signature);
      for (auto it = range.first; it != range.second; ++it) {
        if (evaluated[it->second].representative->SameAs(*ns)) {
          result = &evaluated[it->second];
          break;
        }
      }
    }
    if (result == nullptr) {
      Evaluated e{ns, {}, 0};
      NodeCapacity capacity;
      std::vector<double> ranks;
      if (by_fragmentation) capacity = CapacityOf(*ns);
      if (rank_gpus) ranks = SingleGpuRanks(*ns, capacity, *single, cpu_milli, target);
      e.fit = FitPodOnNode(*ns, request.value(), prefs.value(), rank_gpus ? &ranks : nullptr);
      if (e.fit.fits && by_fragmentation) {
        double before = NodeFragmentation(capacity, target);
        double after =
            NodeFragmentation(CapacityAfter(*ns, capacity, e.fit.slots, cpu_milli), target);
        e.frag_delta = after - before;
      }
      evaluated.push_back(std::move(e));
      result = &evaluated.back();
      if (use_cache) by_signature.emplace(signature, evaluated.size() - 1);
    }
    if (!result->fit.fits) {
      failures.emplace_back(ns, &result->fit.reason);
      continue;
    }
    if (best == nullptr ||
        Better(*result, *best_eval, ns->name, best->name, prefs->node_policy, by_fragmentation)) {
      best = ns;
      best_eval = result;
    }
  }
  if (best == nullptr) {
    for (const auto& [ns, why] : failures) decision.failed_nodes[ns->name] = *why;
    if (total_nodes == 0) return Rejected(std::move(decision), "0/0 nodes are available.");
    std::string message = FormatPodMessage(decision.failed_nodes, total_nodes);
    return Rejected(std::move(decision), message);
  }
  const NodeFit& best_fit = best_eval->fit;
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
  decision.reservation = state::PodReservation{
      pod.Key(),      pod.uid,  best->name, request->num_init, std::move(pod_devices),
      std::move(mig), cpu_milli};
  return decision;
}

Decision Scheduler::Schedule(const model::Pod& pod, const std::vector<std::string>* candidates,
                             int64_t now_unix) {
  // A pod filtered again gives up its earlier reservation first (as HAMi does), but gets it back
  // if it now fits nowhere: nothing reserved is lost on an error path.
  std::optional<state::PodReservation> previous = state_.RemovePod(pod.Key());
  if (auto request = DerivePodRequest(pod, state_.config().nvidia); request.ok()) {
    std::string type;
    if (const std::string* t = pod.Annotation(std::string(model::annotations::kUseGpuType))) {
      type = Join(SplitTrimmed(*t, ','), ",");
    }
    if (auto shape = ShapeOf(*request, model::PodCpuRequestMilli(pod), type)) {
      mix_.Observe(*shape);
    }
  }
  Decision decision = Evaluate(pod, candidates, now_unix);
  if (decision.scheduled) {
    state_.AddPod(decision.reservation);
  } else if (previous) {
    state_.AddPod(std::move(*previous));
  }
  return decision;
}

}  // namespace tessera::sched
