#include "core/sched/explain.h"

#include <algorithm>
#include <functional>
#include <map>

#include "core/sched/fit.h"
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

// Each GPU's reason; with `detailed`, also its use, holders and MIG slice map and options.
std::vector<GpuExplanation> ExplainGpus(const state::ClusterState& state,
                                        const state::NodeState& node, const ContainerRequest* shown,
                                        const PodPreferences& prefs, bool detailed) {
  std::vector<std::string> reasons;
  if (shown != nullptr && node.usable()) reasons = GpuReasons(node, *shown, prefs);
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
    g.reason = i < reasons.size() ? reasons[i] : node.unusable_reason;
    if (!detailed) {
      gpus.push_back(std::move(g));
      continue;
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
    if (d.IsMig()) {
      const mig::GpuMigModel& model = node.mig_models[i];
      g.memory_slices = model.memory_slices();
      for (const state::MigInstance& inst : node.instances[i]) {
        g.instances.push_back(ExplainedInstance{inst.pod_key, inst.profile_name,
                                                inst.placement.start, inst.placement.size,
                                                inst.foreign});
      }
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

// Whether the pod fits on `node` in `state` (as it is now).
bool FitsOn(const Scheduler& scheduler, const model::Pod& pod, const std::string& node,
            std::string* reason) {
  const std::vector<std::string> one{node};
  Decision d = scheduler.Evaluate(pod, &one, 0);
  if (!d.scheduled() && reason != nullptr) {
    auto it = d.failed_nodes.find(node);
    *reason = it != d.failed_nodes.end() ? it->second : d.message;
  }
  return d.scheduled();
}

int64_t HeldMemory(const state::PodReservation* r) {
  int64_t mem = 0;
  if (r == nullptr) return 0;
  for (const auto& slot : r->devices) {
    for (const auto& cd : slot) mem += cd.used_mem;
  }
  return mem;
}

// Every k-subset of `pods` (in lexicographic order of indices), until `visit` returns false.
void ForEachSubset(size_t n, int k, const std::function<bool(const std::vector<size_t>&)>& visit) {
  if (k <= 0 || static_cast<size_t>(k) > n) return;
  std::vector<size_t> idx(static_cast<size_t>(k));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  while (true) {
    if (!visit(idx)) return;
    int i = k - 1;
    while (i >= 0 && idx[i] == n - static_cast<size_t>(k) + static_cast<size_t>(i)) --i;
    if (i < 0) return;
    ++idx[i];
    for (size_t j = static_cast<size_t>(i) + 1; j < idx.size(); ++j) idx[j] = idx[j - 1] + 1;
  }
}

}  // namespace

ExplainDraft PrepareExplanation(const state::ClusterState& live, const model::Pod& pod,
                                const PolicyDefaults& defaults, const ExplainLimits& limits) {
  ExplainDraft draft{{}, pod, defaults, limits, {}};
  Explanation& e = draft.explanation;
  e.pod = pod.Key();
  auto request = DerivePodRequest(pod, live.config().nvidia);
  if (!request.ok()) {
    e.error = request.error().message;
    return draft;
  }
  if (!request->HasGpu()) {
    e.passthrough = true;
    return draft;
  }
  auto prefs = ParsePreferences(pod, defaults);
  if (!prefs.ok()) {
    e.error = prefs.error().message;
    return draft;
  }
  prefs->quota = live.quotas().HeadroomFor(pod.ns);
  const ContainerRequest* shown = ShownContainer(*request);

  // Every node's verdict: HAMi's checks and reason, exact for MIG (the joint search).
  std::map<std::string, std::string> failed;
  // Nodes in one state class answer alike (the scheduler's equivalence cache, same rule).
  const bool cacheable = prefs->use_uuids.empty() && prefs->nouse_uuids.empty();
  std::map<int, std::pair<bool, std::string>> by_class;
  for (const state::NodeState* ns : live.node_list()) {
    NodeExplanation n;
    n.name = ns->name;
    const bool use_cache = cacheable && ns->state_class >= 0 && ns->pair_scores.empty();
    auto cached = use_cache ? by_class.find(ns->state_class) : by_class.end();
    if (cached == by_class.end()) {
      const NodeFit fit = FitPodOnNode(*ns, *request, *prefs);
      cached = by_class
                   .insert_or_assign(use_cache ? ns->state_class : -1,
                                     std::make_pair(fit.fits, fit.reason))
                   .first;
    }
    n.fits = cached->second.first;
    const std::string& reason = cached->second.second;
    if (n.fits) {
      e.fitting_nodes.push_back(ns->name);
    } else {
      n.reason = reason;
      failed[ns->name] = reason;
    }
    e.nodes.push_back(std::move(n));
  }
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
      n.gpus = ExplainGpus(live, *live.node(n.name), shown, *prefs, n.detailed);
    }
  };
  e.fits = !e.fitting_nodes.empty();
  if (e.fits) {
    std::vector<bool> first;
    for (const auto& n : e.nodes) first.push_back(n.fits);
    describe(first);
    return draft;
  }
  e.message = FormatPodMessage(failed, static_cast<int>(live.node_list().size()));

  // Could the node hold the pod with nothing on it (the quota aside)? Nodes alike but for UUIDs
  // (one spec id) answer alike, unless the pod's UUID filters name one of the node's GPUs.
  std::map<int, bool> empty_answer;
  bool any_when_empty = false;
  for (NodeExplanation& n : e.nodes) {
    const state::NodeState* ns = live.node(n.name);
    if (ns == nullptr || !ns->usable()) continue;
    // Foreign MIG instances outlast every pod: such a node's answer is not its spec's.
    const bool shared = ns->spec_id >= 0 && ns->foreign_mig.empty() && !NamesAnyGpuOf(*prefs, *ns);
    auto cached = shared ? empty_answer.find(ns->spec_id) : empty_answer.end();
    if (cached != empty_answer.end()) {
      n.fits_when_empty = cached->second;
    } else {
      n.fits_when_empty = ResolvableByPreemption(*ns, *request, *prefs);
      if (shared) empty_answer[ns->spec_id] = n.fits_when_empty;
    }
    any_when_empty = any_when_empty || n.fits_when_empty;
    if (n.fits_when_empty && static_cast<int>(draft.candidates.size()) < limits.max_nodes) {
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
      ForEachSubset(pods.size(), k, [&](const std::vector<size_t>& idx) {
        std::vector<std::string> set;
        int64_t freed = 0;
        for (size_t i : idx) {
          set.push_back(pods[i]);
          freed += HeldMemory(one.pod(pods[i]));
        }
        if (e.remedy && freed >= e.remedy->freed_mem) return true;  // cannot beat it
        if (e.evaluations >= limits.max_evaluations) {
          stopped = true;
          return false;
        }
        std::vector<state::PodReservation> removed;
        for (const auto& key : set) {
          if (auto r = one.RemovePod(key)) removed.push_back(std::move(*r));
        }
        ++e.evaluations;
        const bool fits = FitsOn(scheduler, draft.pod, name, nullptr);
        for (auto& r : removed) one.AddPod(std::move(r));
        if (fits) e.remedy = Remedy{name, std::move(set), freed};
        return true;
      });
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
