#include "core/sched/explain.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <set>

#include "core/sched/admission.h"
#include "core/sched/cycle_state.h"
#include "core/sched/filter_pass.h"
#include "core/sched/fit.h"
#include "core/sched/node_evaluator.h"
#include "core/sched/preemption.h"
#include "core/sched/reasons.h"
#include "core/sched/request.h"
#include "core/sched/scheduler.h"
#include "core/state/gpu_holders.h"

namespace tessera::sched {
namespace {

// The container whose per-GPU view is shown: the first app container asking for GPUs, else the
// first init container that does.
const ContainerRequest* ShownContainer(const PodRequest& request) {
  const ContainerRequest* first = nullptr;
  for (size_t i = 0; i < request.slots.size(); ++i) {
    if (request.slots[i].Empty()) continue;
    if (!request.IsInit(i)) return &request.slots[i];
    if (first == nullptr) first = &request.slots[i];
  }
  return first;
}

// Per GPU of `node`: the pods holding it, by key.
std::vector<std::vector<std::string>> HoldersOf(const state::ClusterState& state,
                                                const state::NodeState& node) {
  const std::vector<std::string> keys(node.pods.begin(), node.pods.end());
  std::vector<std::vector<std::string>> holders(node.devices.size());
  const auto positions = state::PodsHoldingEachGpu(state, node);
  for (size_t dev = 0; dev < positions.size(); ++dev) {
    for (const size_t p : positions[dev]) holders[dev].push_back(keys[p]);
  }
  return holders;
}

// What `key` holds of GPU `uuid`, counted as HAMi's quota counts a pod (init containers at their
// peak, app containers summed).
GpuHolder HolderOf(const state::ClusterState& state, const std::string& key,
                   const std::string& uuid) {
  GpuHolder h{key, 0, 0, false};
  const state::PodReservation* r = state.pod(key);
  if (r == nullptr) return h;
  if (std::find(r->held_gpus.begin(), r->held_gpus.end(), uuid) != r->held_gpus.end()) {
    h.whole = true;
  }
  state::QuotaCollapse collapse;
  for (size_t slot = 0; slot < r->devices.size(); ++slot) {
    for (const codec::ContainerDevice& cd : r->devices[slot]) {
      if (cd.uuid == uuid) {
        collapse.Add(0, static_cast<int>(slot) < r->num_init, cd.used_mem, cd.used_cores);
      }
    }
  }
  const state::QuotaUse use = collapse.Total();
  h.mem = use.mem;
  h.cores = static_cast<int32_t>(use.cores);
  return h;
}

// What a failed check means for GPU `dev`, with the figures behind it.
std::string CheckDetail(GpuCheck check, const state::NodeState& node, size_t dev,
                        const ContainerRequest& k) {
  const model::GpuDevice& d = node.devices[dev];
  const state::DeviceUsage& u = node.usage[dev];
  const int32_t memreq = MemoryRequest(node, static_cast<int>(dev), d.IsMig(), k);
  switch (check) {
    case GpuCheck::kHealth:
      return "unhealthy, or held whole by a pod whose allocation cannot be read";
    case GpuCheck::kCordoned:
      return "cordoned by the operator";
    case GpuCheck::kType:
      return "a model or mode the pod does not allow";
    case GpuCheck::kUuid:
      return "a UUID the pod does not allow";
    case GpuCheck::kQuota:
      return "past the namespace's GPU quota";
    case GpuCheck::kTimeSlices:
      return "all " + std::to_string(d.count) + " tasks taken";
    case GpuCheck::kMutex:
      return "in use, and the pod asks for GPUs to itself (mutex)";
    case GpuCheck::kMemory:
      return "needs " + std::to_string(memreq) + " MiB, " +
             std::to_string(std::max<int64_t>(int64_t{d.total_mem_mib} - u.used_mem, 0)) + " free";
    case GpuCheck::kCores:
      return "needs " + std::to_string(k.cores) + "% cores, " +
             std::to_string(std::max(d.total_cores - u.used_cores, 0)) + "% free";
    case GpuCheck::kExclusiveCores:
      return "in use, and the pod asks for all its cores";
    case GpuCheck::kComputeUnits:
      return "all cores taken";
    case GpuCheck::kMigPlacement:
      return "no free placement of a profile that holds " + std::to_string(memreq) + " MiB";
    case GpuCheck::kMigForeign:
      return "its free placements are held by instances tessera did not create";
  }
  return {};
}

// Every check GPU `dev` fails for one device of `k` (the filter's FailedGpuChecks, every one of
// them), the filter's reason first, each reason once, with its figures.
std::vector<FailedCheck> ExplainChecks(const state::NodeState& node, size_t dev,
                                       const ContainerRequest& k, const PodPreferences& prefs) {
  std::vector<FailedCheck> checks;
  for (const GpuCheck check :
       FailedGpuChecks(node, static_cast<int>(dev), k, prefs, /*every=*/true)) {
    const std::string_view reason = ReasonOf(check);
    // Two checks share ExclusiveDeviceAllocateConflict: the first says why.
    if (std::any_of(checks.begin(), checks.end(),
                    [&](const FailedCheck& c) { return c.reason == reason; })) {
      continue;
    }
    checks.push_back(FailedCheck{std::string(reason), CheckDetail(check, node, dev, k)});
  }
  return checks;
}

// Each GPU's reason; with `detailed`, also every check it fails, its use, holders and MIG slice
// map and options.
std::vector<GpuExplanation> ExplainGpus(const state::ClusterState& state,
                                        const state::NodeState& node, const ContainerRequest* shown,
                                        const PodPreferences& prefs, bool detailed) {
  std::vector<std::string> reasons;
  if (shown != nullptr && node.usable() && !detailed) reasons = GpuReasons(node, *shown, prefs);
  std::vector<std::vector<std::string>> holders;
  if (detailed) holders = HoldersOf(state, node);
  std::vector<GpuExplanation> gpus;
  gpus.reserve(node.devices.size());
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const model::GpuDevice& d = node.devices[i];
    const state::DeviceUsage& u = node.usage[i];
    GpuExplanation g;
    g.index = static_cast<int>(d.index);
    g.uuid = d.uuid;
    if (!detailed) {
      g.reason = i < reasons.size() ? reasons[i] : node.unusable_reason;
      gpus.push_back(std::move(g));
      continue;
    }
    if (!node.usable()) {
      // Refused as a whole node: its GPUs' own checks do not matter.
      g.reason = node.unusable_reason;
      if (!g.reason.empty()) g.checks.push_back(FailedCheck{g.reason, ""});
    } else if (shown != nullptr) {
      g.checks = ExplainChecks(node, i, *shown, prefs);
      if (!g.checks.empty()) g.reason = g.checks.front().reason;
    }
    g.type = d.type;
    g.mode = d.mode;
    g.used = u.used;
    g.count = d.count;
    g.used_mem = u.used_mem;
    g.total_mem = d.total_mem_mib;
    g.used_cores = u.used_cores;
    g.total_cores = d.total_cores;
    g.pods = std::move(holders[i]);
    for (const std::string& key : g.pods) g.holders.push_back(HolderOf(state, key, d.uuid));
    if (d.IsMig()) {
      const mig::GpuMigModel& model = node.mig_models[i];
      g.memory_slices = model.memory_slices();
      for (const state::MigInstance& inst : node.instances[i]) {
        g.instances.push_back(ExplainedInstance{inst.pod_key, inst.profile_name,
                                                inst.placement.start, inst.placement.size,
                                                inst.foreign});
      }
      // Lettered in start order, so the slice map reads left to right: a, b, ...
      std::stable_sort(
          g.instances.begin(), g.instances.end(),
          [](const ExplainedInstance& a, const ExplainedInstance& b) { return a.start < b.start; });
      if (shown != nullptr && g.reason.empty()) {
        const int32_t mem = MemoryRequest(node, static_cast<int>(i), true, *shown);
        for (int p : model.EligibleProfiles(mig::InstanceDemand{mem, shown->cores})) {
          ExplainedOption option{model.profiles()[p].name, {}};
          for (const model::Placement& pl : model.profiles()[p].placements) {
            if (model.CanPlace(u.layout, p, pl)) option.starts.push_back(pl.start);
          }
          if (!option.starts.empty()) g.options.push_back(std::move(option));
        }
      }
    }
    gpus.push_back(std::move(g));
  }
  return gpus;
}

// What the pod would be charged against its quota on `node` (its devices there, collapsed as
// HAMi's quota counts them), when the cycle `without_quota` (its quota left out) fits it there.
std::optional<state::QuotaUse> ChargeWithoutQuota(const state::NodeState& node,
                                                  const CycleState& without_quota) {
  NodeEvaluator evaluator(without_quota);
  NodeRank unused;
  const NodeFit fit = evaluator.FitAndRank(node, &unused);
  if (!fit.fits) return std::nullopt;
  return QuotaUseOfSlots(fit.slots, without_quota.request().num_init);
}

// The namespace's quotas against the pod: nullopt when no GPU quota applies there. The pod's
// charge is what it would get on the first node (of at most `max_nodes` failing on the quota)
// that takes it with the quota left out; where none does, what HAMi's webhook counts.
std::optional<QuotaExplanation> ExplainQuota(const state::ClusterState& live, const model::Pod& pod,
                                             const ParsedPod& parsed,
                                             const PolicyDefaults& defaults,
                                             const std::vector<NodeExplanation>& nodes,
                                             int max_nodes) {
  const PodRequest& request = parsed.request.value();
  const PodPreferences& prefs = parsed.prefs->value();
  if (!prefs.quota) return std::nullopt;
  const state::QuotaBook& book = live.quotas();
  auto found = book.namespaces().find(pod.ns);
  if (found == book.namespaces().end() || found->second.quotas.empty()) return std::nullopt;
  QuotaExplanation q;
  q.ns = pod.ns;
  PodPreferences without_quota = prefs;
  without_quota.quota.reset();
  const DemandMix mix(defaults.demand_decay);
  const MigDemandMix mig_mix(defaults.demand_decay);
  const CycleState cycle(request, without_quota, parsed.cpu_milli, mix, mig_mix, defaults);
  std::optional<state::QuotaUse> charge;
  int tried = 0;
  for (const NodeExplanation& n : nodes) {
    if (tried >= max_nodes) break;
    if (n.fits || n.status.counts[Reason::kResourceQuotaNotFit] == 0) continue;
    const state::NodeState* ns = live.node(n.name);
    if (ns == nullptr) continue;
    ++tried;
    charge = ChargeWithoutQuota(*ns, cycle);
    if (charge) break;
  }
  q.blocks = charge.has_value();
  const state::QuotaUse asked = charge.value_or(AdmissionQuotaUse(request));
  const state::QuotaUse& used = found->second.used;
  for (const auto& [name, limits] : found->second.quotas) {
    if (limits.mem) {
      const int64_t limit = book.MemoryLimitMib(*limits.mem);
      q.limits.push_back(QuotaLimitExplanation{name, book.memory_key(), true, limit, used.mem,
                                               asked.mem, used.mem + asked.mem > limit});
      if (q.limits.back().exceeded) q.free_mem = std::max(q.free_mem, used.mem + asked.mem - limit);
    }
    if (limits.cores) {
      q.limits.push_back(QuotaLimitExplanation{name, book.core_key(), false, *limits.cores,
                                               used.cores, asked.cores,
                                               used.cores + asked.cores > *limits.cores});
      if (q.limits.back().exceeded)
        q.free_cores = std::max(q.free_cores, used.cores + asked.cores - *limits.cores);
    }
  }
  if (q.limits.empty()) return std::nullopt;  // its quotas limit no GPU resource
  return q;
}

// One GPU of each model the nodes register (its type, and whether it is in MIG mode), in the
// order they first appear. Nodes of one spec id are alike: only the first of each is read.
std::vector<std::pair<const state::NodeState*, int>> OneGpuOfEachModel(
    const state::ClusterState& state) {
  std::vector<std::pair<const state::NodeState*, int>> kinds;
  std::set<int> specs_seen;
  for (const state::NodeState* node : state.node_list()) {
    if (node->spec_id >= 0 && !specs_seen.insert(node->spec_id).second) continue;
    for (size_t dev = 0; dev < node->devices.size(); ++dev) {
      const model::GpuDevice& d = node->devices[dev];
      const bool known = std::any_of(kinds.begin(), kinds.end(), [&](const auto& kind) {
        const model::GpuDevice& seen = kind.first->devices[kind.second];
        return seen.type == d.type && seen.IsMig() == d.IsMig();
      });
      if (!known) kinds.emplace_back(node, static_cast<int>(dev));
    }
  }
  return kinds;
}

// What one device of `k` takes on each GPU model the pod may use (the filter's type and mode
// check, its memory rule, the MIG model's smallest profile that holds it).
std::vector<ModelMapping> MapToModels(const state::ClusterState& live, const ContainerRequest& k,
                                      const PodPreferences& prefs) {
  std::vector<ModelMapping> mappings;
  for (const auto& [node, dev] : OneGpuOfEachModel(live)) {
    const model::GpuDevice& d = node->devices[dev];
    if (!ModelAllowed(node->types_upper[dev], d.mode, prefs)) continue;
    ModelMapping m;
    m.gpu_type = d.type;
    m.mig = d.IsMig();
    const int32_t mem = MemoryRequest(*node, dev, m.mig, k);
    if (m.mig) {
      const mig::GpuMigModel& model = node->mig_models[dev];
      const std::vector<int> eligible = model.EligibleProfiles(mig::InstanceDemand{mem, k.cores});
      if (eligible.empty()) {
        m.mem = mem;
      } else {
        m.profile = model.profiles()[eligible.front()].name;
        m.mem = model.profiles()[eligible.front()].memory_mib;
        m.possible = true;
      }
    } else {
      m.mem = mem;
      m.cores = k.cores;
      m.gpu_mem = d.total_mem_mib;
      m.possible = mem <= d.total_mem_mib && k.cores <= d.total_cores;
    }
    mappings.push_back(std::move(m));
  }
  return mappings;
}

// Devices of `k` the node's GPUs could still take now, each GPU on its own: a GPU passing the
// filter's checks takes one share, or on MIG as many instances as its free slices hold.
int RoomOn(const state::NodeState& node, const ContainerRequest& k, const PodPreferences& prefs) {
  if (!node.usable()) return 0;
  int room = 0;
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const int dev = static_cast<int>(i);
    if (!FailedGpuChecks(node, dev, k, prefs, /*every=*/false).empty()) continue;
    if (!node.devices[i].IsMig()) {
      ++room;
      continue;
    }
    const mig::GpuMigModel& model = node.mig_models[i];
    std::vector<mig::InstanceDemand> demands{
        mig::InstanceDemand{MemoryRequest(node, dev, true, k), k.cores}};
    while (demands.size() < model.memory_slices()) {
      demands.push_back(demands.front());
      if (!model.Arrange(node.usage[i].layout, demands)) {
        demands.pop_back();
        break;
      }
    }
    room += static_cast<int>(demands.size());
  }
  return room;
}

// RoomOn for every node, once per state class (the filter's equivalence rule).
void FillRoom(const state::ClusterState& live, const ContainerRequest& k,
              const PodPreferences& prefs, std::vector<NodeExplanation>* nodes) {
  PodPreferences without_quota = prefs;
  without_quota.quota.reset();  // the quota has its own lines
  std::map<int, int> by_class;
  for (NodeExplanation& n : *nodes) {
    const state::NodeState* ns = live.node(n.name);
    if (ns == nullptr) continue;
    const bool shared =
        SharesStateClassAnswer(*ns, prefs.use_uuids.empty() && prefs.nouse_uuids.empty(), prefs);
    if (shared) {
      if (auto it = by_class.find(ns->state_class); it != by_class.end()) {
        n.room = it->second;
        continue;
      }
    }
    n.room = RoomOn(*ns, k, without_quota);
    if (shared) by_class[ns->state_class] = n.room;
  }
}

// Whether the pod fits on `node` in `state` (as it is now).
bool FitsOn(const Scheduler& scheduler, const model::Pod& pod, const std::string& node) {
  const std::vector<std::string> one{node};
  return scheduler.Evaluate(pod, &one, 0).scheduled();
}

int64_t HeldMemory(const state::PodReservation* r) {
  int64_t mem = 0;
  if (r == nullptr) return 0;
  for (const auto& slot : r->devices) {
    for (const auto& cd : slot) mem += cd.used_mem;
  }
  return mem;
}

}  // namespace

ExplainDraft PrepareExplanation(const state::ClusterState& live, const model::Pod& pod,
                                const PolicyDefaults& defaults, const ExplainLimits& limits) {
  ExplainDraft draft{{}, pod, defaults, limits, {}};
  Explanation& e = draft.explanation;
  e.pod = pod.Key();
  // The cycle's own phases give every verdict: explain adds only what it shows around them.
  CycleVerdicts verdicts = FilterEveryNode(live, pod, defaults);
  if (verdicts.decision.passthrough()) {
    e.passthrough = true;
    return draft;
  }
  if (verdicts.decision.invalid_request()) {
    e.error = verdicts.decision.message;
    return draft;
  }
  const PodRequest& request = verdicts.parsed.request.value();
  const PodPreferences& prefs = verdicts.parsed.prefs->value();
  const ContainerRequest* shown = ShownContainer(request);
  e.devices_asked = shown != nullptr ? shown->nums : 0;
  e.near_misses = FindNearMisses(request, prefs, MigGpuKindsOf(live));
  if (shown != nullptr) {
    e.mappings = MapToModels(live, *shown, prefs);
    const auto gpu_containers = std::count_if(request.slots.begin(), request.slots.end(),
                                              [](const ContainerRequest& k) { return !k.Empty(); });
    const auto slot = static_cast<size_t>(shown - request.slots.data());
    if (gpu_containers > 1 && slot < request.names.size()) e.shown_container = request.names[slot];
  }
  for (NodeVerdict& v : verdicts.nodes) {
    NodeExplanation n;
    n.name = v.node->name;
    n.fits = v.fits;
    if (n.fits) {
      e.fitting_nodes.push_back(n.name);
    } else {
      n.status = std::move(v.status);
      n.fits_when_empty = n.status.resolvable();
    }
    e.nodes.push_back(std::move(n));
  }
  if (shown != nullptr) FillRoom(live, *shown, prefs, &e.nodes);
  // GPU details for a few nodes: the asked-for one, then those that fit (or could, emptied),
  // then the first by name; the others get each GPU's reason only.
  auto describe = [&](const std::vector<bool>& first) {
    int detailed = 0;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t i = 0; i < e.nodes.size(); ++i) {
        NodeExplanation& n = e.nodes[i];
        if (n.detailed || (pass == 0 && !first[i])) continue;
        const bool wanted = n.name == limits.detail_node;
        if (!wanted && detailed >= limits.max_detailed_nodes) continue;
        n.detailed = true;
        if (!wanted) ++detailed;
      }
    }
    for (NodeExplanation& n : e.nodes) {
      n.gpus = ExplainGpus(live, *live.node(n.name), shown, prefs, n.detailed);
    }
  };
  e.fits = !e.fitting_nodes.empty();
  if (e.fits) {
    std::vector<bool> first;
    for (const auto& n : e.nodes) first.push_back(n.fits);
    describe(first);
    return draft;
  }
  e.message = verdicts.decision.message;
  e.quota = ExplainQuota(live, pod, verdicts.parsed, defaults, e.nodes, limits.max_nodes);
  // The nodes that could hold the pod with nothing on it (the quota aside): the post-filter's
  // preemption check. The remedy search tries the first few, on copies.
  bool any_when_empty = false;
  for (const NodeExplanation& n : e.nodes) {
    if (!n.fits_when_empty) continue;
    any_when_empty = true;
    if (static_cast<int>(draft.candidates.size()) < limits.max_nodes) {
      draft.candidates.push_back(live.Subset({n.name}));
    }
  }
  e.never_fits = !any_when_empty;
  std::vector<bool> first;
  for (const auto& n : e.nodes) first.push_back(n.fits_when_empty);
  describe(first);
  if (e.never_fits) return draft;
  if (draft.candidates.size() < static_cast<size_t>(std::count_if(
                                    e.nodes.begin(), e.nodes.end(),
                                    [](const NodeExplanation& n) { return n.fits_when_empty; }))) {
    e.search_complete = false;  // more nodes could hold it than are searched
  }
  return draft;
}

Explanation FinishExplanation(ExplainDraft draft) {
  Explanation& e = draft.explanation;
  if (e.fits || e.never_fits || !e.error.empty() || e.passthrough) return std::move(e);
  const ExplainLimits& limits = draft.limits;
  bool stopped = false;
  std::optional<VictimSet> best;  // e.remedy's set and cost
  // The smallest set first; among sets of that size, the least GPU memory given up, then the
  // first node by name. Exact per node up to max_pods_removed, within the evaluation budget.
  for (int k = 1; k <= limits.max_pods_removed && !e.remedy && !stopped; ++k) {
    for (state::ClusterState& one : draft.candidates) {
      const state::NodeState* ns = one.node_list().front();
      const std::string name = ns->name;
      const std::vector<std::string> pods(ns->pods.begin(), ns->pods.end());
      if (static_cast<size_t>(k) >= pods.size()) {
        // With every pod gone it fits (ignoring quotas); a set of this size is all of them.
        if (static_cast<size_t>(k) != pods.size()) continue;
        int64_t freed = 0;
        for (const auto& key : pods) freed += HeldMemory(one.pod(key));
        if (e.remedy && freed >= e.remedy->freed_mem) continue;
      }
      Scheduler scheduler(one, draft.defaults);
      // The search preemption uses too (preemption.h), with every pod a candidate at one
      // priority and no budgets: the cost is then the set's size, then the memory it frees.
      std::vector<VictimCandidate> removable;
      removable.reserve(pods.size());
      for (const auto& key : pods) removable.push_back({key, 0, HeldMemory(one.pod(key))});
      VictimSearch search(one, std::move(removable));
      const auto step = search.TrySetsOfSize(
          k, [&] { return FitsOn(scheduler, draft.pod, name); }, &best, &e.evaluations,
          limits.max_evaluations);
      if (step.improved) e.remedy = Remedy{name, best->pods, best->cost.freed_mem};
      stopped = step.stopped;
      if (stopped) break;
    }
  }
  if (!e.remedy && stopped) e.search_complete = false;
  return std::move(e);
}

Explanation ExplainPod(const state::ClusterState& live, const model::Pod& pod,
                       const PolicyDefaults& defaults, const ExplainLimits& limits) {
  return FinishExplanation(PrepareExplanation(live, pod, defaults, limits));
}

}  // namespace tessera::sched
