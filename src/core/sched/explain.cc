#include "core/sched/explain.h"

#include <algorithm>
#include <functional>

#include "core/sched/fit.h"
#include "core/sched/request.h"
#include "core/sched/scheduler.h"

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

std::vector<GpuExplanation> ExplainGpus(const state::ClusterState& state,
                                        const state::NodeState& node, const ContainerRequest* shown,
                                        const PodPreferences& prefs) {
  std::vector<std::string> reasons;
  if (shown != nullptr && node.usable()) reasons = GpuReasons(node, *shown, prefs);
  std::vector<GpuExplanation> gpus;
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const model::GpuDevice& d = node.devices[i];
    const state::DeviceUsage& u = node.usage[i];
    GpuExplanation g;
    g.index = static_cast<int>(d.index);
    g.uuid = d.uuid;
    g.type = d.type;
    g.mode = d.mode;
    g.reason = i < reasons.size() ? reasons[i] : node.unusable_reason;
    g.used = u.used;
    g.count = d.count;
    g.used_mem = u.used_mem;
    g.total_mem = d.total_mem_mib;
    g.used_cores = u.used_cores;
    g.total_cores = d.total_cores;
    for (const std::string& key : node.pods) {
      const state::PodReservation* r = state.pod(key);
      if (r == nullptr) continue;
      bool holds =
          std::find(r->held_gpus.begin(), r->held_gpus.end(), d.uuid) != r->held_gpus.end();
      for (const auto& slot : r->devices) {
        for (const auto& cd : slot) holds = holds || cd.uuid == d.uuid;
      }
      if (holds) g.pods.push_back(key);
    }
    if (d.IsMig()) {
      const mig::GpuMigModel& model = node.mig_models[i];
      g.memory_slices = model.memory_slices();
      for (const state::MigInstance& inst : node.instances[i]) {
        g.instances.push_back(ExplainedInstance{inst.pod_key, inst.profile_name,
                                                inst.placement.start, inst.placement.size});
      }
      if (shown != nullptr && g.reason.empty()) {
        int32_t mem = shown->mem_mib;
        if (mem == 0) {
          mem = static_cast<int32_t>(static_cast<int64_t>(model.LargestProfileMemory()) *
                                     shown->mem_percent / 100);
        }
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
  if (!d.scheduled && reason != nullptr) {
    auto it = d.failed_nodes.find(node);
    *reason = it != d.failed_nodes.end() ? it->second : d.message;
  }
  return d.scheduled;
}

int64_t HeldMemory(const state::PodReservation& r) {
  int64_t mem = 0;
  for (const auto& slot : r.devices) {
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

Explanation ExplainPod(state::ClusterState state, const model::Pod& pod,
                       const PolicyDefaults& defaults, const ExplainLimits& limits) {
  Explanation e;
  e.pod = pod.Key();
  Scheduler scheduler(state, defaults);
  const Decision all = scheduler.Evaluate(pod, nullptr, 0);
  if (all.invalid_request) {
    e.error = all.message;
    return e;
  }
  if (all.passthrough) {
    e.passthrough = true;
    return e;
  }
  auto request = DerivePodRequest(pod, state.config().nvidia);
  auto prefs = ParsePreferences(pod, defaults);
  if (!request.ok() || !prefs.ok()) {  // Evaluate accepted both: cannot happen
    e.error = request.ok() ? prefs.error().message : request.error().message;
    return e;
  }
  prefs->quota = state.quotas().HeadroomFor(pod.ns);
  const ContainerRequest* shown = ShownContainer(*request);
  e.fits = all.scheduled;
  if (!all.scheduled) e.message = all.message;

  for (const state::NodeState* ns : state.node_list()) {
    NodeExplanation n;
    n.name = ns->name;
    if (all.scheduled) {
      n.fits = FitsOn(scheduler, pod, ns->name, &n.reason);
    } else {
      auto it = all.failed_nodes.find(ns->name);
      n.reason = it != all.failed_nodes.end() ? it->second : ns->unusable_reason;
    }
    if (n.fits) e.fitting_nodes.push_back(ns->name);
    n.gpus = ExplainGpus(state, *ns, shown, *prefs);
    e.nodes.push_back(std::move(n));
  }
  if (e.fits) return e;

  // Could the node hold the pod at all, with every pod on it gone?
  auto without = [&](const std::string& node, const std::vector<std::string>& pods) {
    std::vector<state::PodReservation> removed;
    for (const auto& key : pods) {
      if (auto r = state.RemovePod(key)) removed.push_back(std::move(*r));
    }
    ++e.evaluations;
    const bool fits = FitsOn(scheduler, pod, node, nullptr);
    for (auto& r : removed) state.AddPod(std::move(r));
    return fits;
  };
  bool any_when_empty = false;
  for (NodeExplanation& n : e.nodes) {
    const state::NodeState* ns = state.node(n.name);
    if (ns == nullptr || !ns->usable()) continue;
    const std::vector<std::string> pods(ns->pods.begin(), ns->pods.end());
    n.fits_when_empty = without(n.name, pods);
    any_when_empty = any_when_empty || n.fits_when_empty;
  }
  if (!any_when_empty) {
    e.never_fits = true;
    return e;
  }

  // The smallest set first; among sets of that size, the least GPU memory given up, then the
  // first node by name. Exact per node up to max_pods_removed, within the evaluation budget.
  for (int k = 1; k <= limits.max_pods_removed && !e.remedy; ++k) {
    for (const NodeExplanation& n : e.nodes) {
      if (!n.fits_when_empty) continue;
      const state::NodeState* ns = state.node(n.name);
      const std::vector<std::string> pods(ns->pods.begin(), ns->pods.end());
      if (static_cast<size_t>(k) >= pods.size()) {
        // Removing every pod is known to work; a set of this size is then all of them.
        if (static_cast<size_t>(k) == pods.size()) {
          int64_t freed = 0;
          for (const auto& key : pods) freed += HeldMemory(*state.pod(key));
          if (!e.remedy || freed < e.remedy->freed_mem) e.remedy = Remedy{n.name, pods, freed};
        }
        continue;
      }
      ForEachSubset(pods.size(), k, [&](const std::vector<size_t>& idx) {
        if (e.evaluations >= limits.max_evaluations) {
          e.search_complete = false;
          return false;
        }
        std::vector<std::string> set;
        int64_t freed = 0;
        for (size_t i : idx) {
          set.push_back(pods[i]);
          freed += HeldMemory(*state.pod(pods[i]));
        }
        if (e.remedy && freed >= e.remedy->freed_mem) return true;  // cannot beat it
        if (without(n.name, set)) e.remedy = Remedy{n.name, std::move(set), freed};
        return true;
      });
    }
  }
  if (!e.remedy && e.evaluations >= limits.max_evaluations) e.search_complete = false;
  return e;
}

}  // namespace tessera::sched
