#include "core/sched/scheduler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/codec/mig_allocations.h"
#include "core/codec/pod_devices.h"
#include "core/common/strings.h"
#include "core/model/annotations.h"
#include "core/sched/mig_placement.h"
#include "core/sched/node_scoring.h"
#include "core/sched/reasons.h"

namespace tessera::sched {
namespace {

namespace ann = model::annotations;

// An unschedulable or invalid pod's decision, with its message.
Decision Rejected(Decision d, const std::string& message) {
  d.message = message;
  return d;
}

// Fragmentation deltas are compared in steps of 4% of a GPU (FGD's integer scores have about
// this resolution near zero; measured in docs/replay.md).
constexpr double kFragmentationQuantum = 0.04;

// MIG placeability drops are sums of weights times small integers; this rounds away float noise.
constexpr double kPlaceabilityQuantum = 1e-6;

// How a node that fits compares with the others.
struct Rank {
  double bucket;  // tessera: the fragmentation (or MIG placeability) cost in quanta; else 0
  float score;    // tessera: NodeFit::score; HAMi's policies: HAMi's score before the pod
  bool idle;      // no GPU of the node is in use (before the pod)
  bool mig;       // placed by the MIG plan (ranked by placeability, then fullness)
};

// The first by name (ClusterState keeps each node's position in name order).
bool NameBefore(const state::NodeState& a, const state::NodeState& b) {
  if (a.name_order >= 0 && b.name_order >= 0) return a.name_order < b.name_order;
  return a.name < b.name;
}

bool Better(const Rank& candidate, const Rank& best, const state::NodeState& candidate_node,
            const state::NodeState& best_node, NodePolicy policy, bool by_fragmentation) {
  // Expected fragmentation is an estimate: differences below a quantum (a small share of one
  // GPU) are noise, and chasing them scatters pods.
  if (candidate.bucket != best.bucket) return candidate.bucket < best.bucket;
  if (by_fragmentation && !candidate.mig && !best.mig) {
    // binpack among equals: a node already in use before an idle one (an idle node stays whole
    // for large pods and can be scaled down), then the first in a fixed node order, as FGD's
    // simulator breaks ties (the first top-scoring node of a node list shuffled once). Pod after
    // pod then fills the same nodes first, on every resource at once: a cluster-wide first fit.
    // The fullest node instead jumps between half-used nodes: 0.1 points of allocation less on
    // average over the 13 traces of the replay, up to 0.3 on some (docs/replay.md). The order
    // is a hash of the name, not the name itself, so that nodes named alike (one rack, one
    // pool) are not filled as a block, and it does not change when nodes come and go.
    if (candidate.idle != best.idle) return best.idle;
    if (candidate_node.tie_order != best_node.tie_order) {
      return candidate_node.tie_order < best_node.tie_order;
    }
    return NameBefore(candidate_node, best_node);
  }
  // tessera and HAMi's binpack: the fullest node; HAMi's spread: the emptiest. Ties: the first by
  // name (HAMi leaves them to goroutine timing).
  if (candidate.score != best.score) {
    return policy == NodePolicy::kSpread ? candidate.score < best.score
                                         : candidate.score > best.score;
  }
  return NameBefore(candidate_node, best_node);
}

void Prefetch(const state::NodeState& ns) {
#if defined(__GNUC__)
  __builtin_prefetch(&ns.unusable_reason);
  __builtin_prefetch(&ns.pair_scores);
  __builtin_prefetch(&ns.state_class);
#else
  (void)ns;
#endif
}

}  // namespace

Decision Scheduler::Evaluate(const model::Pod& pod, const std::vector<std::string>* candidates,
                             int64_t now_unix) const {
  if (candidates == nullptr) return EvaluateOn(pod, state_.node_list(), {}, now_unix);
  std::vector<const state::NodeState*> nodes;
  std::vector<const std::string*> unregistered;
  nodes.reserve(candidates->size());
  for (const auto& name : *candidates) {
    const state::NodeState* ns = state_.node(name);
    if (ns == nullptr) {
      unregistered.push_back(&name);
      continue;
    }
    nodes.push_back(ns);
  }
  return EvaluateOn(pod, nodes, unregistered, now_unix);
}

Decision Scheduler::Evaluate(const model::Pod& pod,
                             std::span<const state::NodeState* const> candidates,
                             int64_t now_unix) const {
  return EvaluateOn(pod, candidates, {}, now_unix);
}

Decision Scheduler::EvaluateOn(const model::Pod& pod,
                               std::span<const state::NodeState* const> nodes,
                               std::span<const std::string* const> unregistered,
                               int64_t now_unix) const {
  Decision decision;
  // Phase 1: parse the request and the pod's preferences.
  auto request = DerivePodRequest(pod, state_.config().nvidia);
  if (!request.ok()) {
    decision.outcome = Outcome::kInvalidRequest;
    return Rejected(std::move(decision), request.error().message);
  }
  decision.container_names = request->names;
  if (!request->HasGpu()) {
    // Not ours: kube-scheduler places it on its own (HAMi's pass-through).
    decision.outcome = Outcome::kPassthrough;
    decision.containers.resize(request->slots.size());
    return decision;
  }
  auto prefs = ParsePreferences(pod, defaults_);
  if (!prefs.ok()) {
    decision.outcome = Outcome::kInvalidRequest;
    return Rejected(std::move(decision), prefs.error().message);
  }
  prefs->quota = state_.quotas().HeadroomFor(pod.ns);
  // Phase 2: filter every candidate node; phase 3: score the ones that fit.
  for (const std::string* name : unregistered) {
    decision.failed_nodes[*name] = "node unregistered";
    decision.unresolvable_nodes.insert(*name);
  }
  const int total_nodes = static_cast<int>(nodes.size() + decision.failed_nodes.size());
  const int64_t cpu_milli = model::PodCpuRequestMilli(pod);
  const std::vector<WeightedShape>& target = mix_.Target();
  // tessera's node ranking; a named HAMi policy ranks by HAMi's node score alone.
  const bool tessera_nodes = prefs->node_policy == NodePolicy::kTessera;
  const bool by_fragmentation = tessera_nodes && !target.empty();
  // A pod asking one shared GPU also chooses its GPU by fragmentation (FGD's GPU choice).
  const ContainerRequest* single = nullptr;
  for (size_t i = 0; i < request->slots.size(); ++i) {
    if (request->slots[i].Empty()) continue;
    single = single == nullptr && request->slots[i].nums == 1 ? &request->slots[i] : nullptr;
    if (single == nullptr) break;
  }
  const bool rank_gpus = prefs->gpu_policy.tessera && !target.empty() && single != nullptr &&
                         !MigOnly(prefs->vgpu_mode);
  const PreparedTarget prepared(target);
  // MIG GPUs are placed to keep the most placeability for the demand mix (docs/placement.md).
  const MigWeights mig_weights(mig_mix_, defaults_.mig_prior);
  MigArrangeCache mig_cache;
  const MigGoal mig_goal{&mig_weights, defaults_.mig_allow_larger_profiles, &mig_cache};
  const MigGoal* goal = prefs->gpu_policy.tessera ? &mig_goal : nullptr;

  // Nodes in the same state give the same answer; evaluate each state once (an equivalence
  // cache, as kube-scheduler once had). Not used when the answer depends on GPU UUIDs.
  const bool cacheable = prefs->use_uuids.empty() && prefs->nouse_uuids.empty();
  constexpr uint32_t kNone = ~0U;
  struct Evaluated {
    const state::NodeState* representative;
    uint32_t fit;  // index into `full_fits`; kNone when MayFit ruled the node out
    bool fits;
    Rank rank;  // when it fits
  };
  std::vector<Evaluated> evaluated;
  std::vector<NodeFit> full_fits;  // few: MayFit rules most nodes out
  // The evaluated state of each state class (ClusterState keeps nodes in the same state in one
  // class, so no hashing or state comparison happens here).
  std::vector<uint32_t> by_class;
  if (cacheable) by_class.assign(state_.state_class_bound(), kNone);
  evaluated.reserve(cacheable ? std::min(nodes.size(), by_class.size()) : nodes.size());
  full_fits.reserve(32);

  // The full filter and score of one node, with buffers reused from node to node.
  NodeCapacity capacity;
  NodeCapacity scratch;
  std::vector<double> ranks;
  auto evaluate = [&](Evaluated& e) {
    const state::NodeState& ns = *e.representative;
    if (by_fragmentation || rank_gpus) CapacityOf(ns, &capacity);
    if (rank_gpus) SingleGpuRanks(ns, capacity, *single, cpu_milli, prepared, &ranks, &scratch);
    e.fit = static_cast<uint32_t>(full_fits.size());
    NodeFit& fit = full_fits.emplace_back(
        FitPodOnNode(ns, request.value(), prefs.value(), rank_gpus ? &ranks : nullptr, goal));
    e.fits = fit.fits;
    e.rank = Rank{0, tessera_nodes ? fit.score : NodeScore(ns, {}),
                  std::all_of(ns.usage.begin(), ns.usage.end(),
                              [](const state::DeviceUsage& u) { return u.used == 0; }),
                  fit.mig_planned};
    if (!tessera_nodes) return;
    if (fit.fits && fit.mig_planned) {
      e.rank.bucket = std::round(fit.mig_drop / kPlaceabilityQuantum);
    } else if (fit.fits && by_fragmentation) {
      const double before = NodeFragmentation(capacity, prepared);
      scratch = capacity;
      ApplyToCapacity(ns, fit.slots, cpu_milli, &scratch);
      const double after = NodeFragmentation(scratch, prepared);
      e.rank.bucket = std::floor((after - before) / kFragmentationQuantum);
    }
  };

  // Why each node failed; written out only when no node fits (kube-scheduler needs the reasons
  // then, and building 5000 strings per successful decision would dominate its cost).
  std::vector<std::pair<const state::NodeState*, uint32_t>> failures;  // kNone: unusable
  const state::NodeState* best = nullptr;
  uint32_t best_eval = kNone;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const state::NodeState* ns = nodes[i];
    // Node states are scattered in memory: ask early for what the loop reads of the next ones.
    if (i + 8 < nodes.size()) Prefetch(*nodes[i + 8]);
    if (!ns->usable()) {
      if (explain_failures_) failures.emplace_back(ns, kNone);
      continue;
    }
    uint32_t result = kNone;
    const bool use_cache = cacheable && ns->pair_scores.empty() && ns->state_class >= 0 &&
                           static_cast<size_t>(ns->state_class) < by_class.size();
    if (use_cache) result = by_class[ns->state_class];
    if (result == kNone) {
      result = static_cast<uint32_t>(evaluated.size());
      Evaluated& e = evaluated.emplace_back(Evaluated{ns, kNone, false, Rank{0, 0, false, false}});
      // Most nodes cannot take the pod: a cheap check rules them out before the full fit.
      if (MayFit(*ns, request.value(), prefs.value())) evaluate(e);
      if (use_cache) by_class[ns->state_class] = result;
    }
    const Evaluated& e = evaluated[result];
    if (!e.fits) {
      if (explain_failures_) failures.emplace_back(ns, result);
      continue;
    }
    if (best == nullptr || Better(e.rank, evaluated[best_eval].rank, *ns, *best, prefs->node_policy,
                                  by_fragmentation)) {
      best = ns;
      best_eval = result;
    }
  }
  if (best == nullptr) {
    if (total_nodes == 0) return Rejected(std::move(decision), "0/0 nodes are available.");
    if (!explain_failures_) {
      return Rejected(std::move(decision), "0/" + std::to_string(total_nodes) +
                                               " nodes are available (reasons not collected).");
    }
    // Whether preemption could help: emptied of pods, nodes alike but for UUIDs (one spec id)
    // are the same node, unless the pod's UUID filters name one of the node's GPUs. Looked up
    // by spec id in a vector: this runs for every refused node.
    std::vector<int8_t> resolvable_by_spec;
    auto resolvable = [&](const state::NodeState& node) {
      if (node.spec_id < 0 || NamesAnyGpuOf(prefs.value(), node)) {
        return ResolvableByPreemption(node, request.value(), prefs.value());
      }
      const auto spec = static_cast<size_t>(node.spec_id);
      if (spec >= resolvable_by_spec.size()) resolvable_by_spec.resize(spec + 1, -1);
      if (resolvable_by_spec[spec] < 0) {
        resolvable_by_spec[spec] =
            ResolvableByPreemption(node, request.value(), prefs.value()) ? 1 : 0;
      }
      return resolvable_by_spec[spec] == 1;
    };
    for (const auto& [ns, index] : failures) {
      if (index == kNone) {
        decision.failed_nodes[ns->name] = ns->unusable_reason;
        decision.unresolvable_nodes.insert(ns->name);
        continue;
      }
      Evaluated& e = evaluated[index];
      if (e.fit == kNone) evaluate(e);  // ruled out by MayFit: the full fit says why
      NodeFit& fit = full_fits[e.fit];
      if (fit.reason_deferred) {
        fit = FitPodOnNode(*e.representative, request.value(), prefs.value());
        fit.fits = false;  // the exact plan said so; only HAMi's reason is wanted
      }
      decision.failed_nodes[ns->name] = fit.reason;
      if (!resolvable(*ns)) decision.unresolvable_nodes.insert(ns->name);
    }
    std::string message = FormatPodMessage(decision.failed_nodes, total_nodes);
    return Rejected(std::move(decision), message);
  }
  const NodeFit& best_fit = full_fits[evaluated[best_eval].fit];
  // Phase 4 (prepared here, applied by Schedule): the reservation and its annotations.
  decision.outcome = Outcome::kScheduled;
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

bool Scheduler::FirstSight(const model::Pod& pod) {
  // Enough to cover every pod pending at once on a large cluster; an older one seen again
  // counts again, which only matters after thousands of other pods.
  constexpr size_t kRemembered = 16384;
  std::string id = pod.uid.empty() ? pod.Key() : pod.uid;
  if (!observed_.insert(id).second) return false;
  observed_order_.push_back(std::move(id));
  if (observed_order_.size() > kRemembered) {
    observed_.erase(observed_order_.front());
    observed_order_.pop_front();
  }
  return true;
}

std::optional<state::PodReservation> Scheduler::BeginSchedule(const model::Pod& pod) {
  // A pod filtered again gives up its earlier reservation first (as HAMi does), but gets it back
  // if it now fits nowhere: nothing reserved is lost on an error path.
  std::optional<state::PodReservation> previous = state_.RemovePod(pod.Key());
  if (!FirstSight(pod)) return previous;
  if (auto request = DerivePodRequest(pod, state_.config().nvidia); request.ok()) {
    std::string type;
    if (const std::string* t = pod.Annotation(std::string(model::annotations::kUseGpuType))) {
      type = Join(SplitTrimmed(*t, ','), ",");
    }
    if (auto shape = ShapeOf(*request, model::PodCpuRequestMilli(pod), type)) {
      mix_.Observe(*shape);
    }
    // A request not pinned to another mode may land on a MIG GPU: it is part of the MIG mix.
    if (auto mode = ParseVgpuMode(pod); mode.ok() && MayUseMig(*mode)) {
      for (size_t i = 0; i < request->slots.size(); ++i) {
        const ContainerRequest& k = request->slots[i];
        if (request->IsInit(i) || k.Empty()) continue;
        mig_mix_.Observe(MigDemandOf(k), k.nums);
      }
    }
  }
  return previous;
}

Decision Scheduler::EndSchedule(Decision decision, std::optional<state::PodReservation> previous) {
  if (decision.scheduled()) {
    state_.AddPod(decision.reservation);
  } else if (previous) {
    state_.AddPod(std::move(*previous));
  }
  return decision;
}

Decision Scheduler::Preview(const model::Pod& pod, const std::vector<std::string>* candidates,
                            int64_t now_unix) {
  std::optional<state::PodReservation> own = state_.RemovePod(pod.Key());
  Decision decision = Evaluate(pod, candidates, now_unix);
  if (own) state_.AddPod(std::move(*own));
  return decision;
}

Decision Scheduler::Schedule(const model::Pod& pod, const std::vector<std::string>* candidates,
                             int64_t now_unix) {
  std::optional<state::PodReservation> previous = BeginSchedule(pod);
  return EndSchedule(Evaluate(pod, candidates, now_unix), std::move(previous));
}

Decision Scheduler::Schedule(const model::Pod& pod,
                             std::span<const state::NodeState* const> candidates,
                             int64_t now_unix) {
  std::optional<state::PodReservation> previous = BeginSchedule(pod);
  return EndSchedule(Evaluate(pod, candidates, now_unix), std::move(previous));
}

}  // namespace tessera::sched
