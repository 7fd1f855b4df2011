#include "sim/mig_replay/placement_problem.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "sim/mig_replay/placement_bound.h"

namespace tessera::sim::mig_replay {

std::vector<GpuClass> Classes(const MigCluster& cluster) {
  const size_t types = cluster.workload().types.size();
  std::map<std::string, size_t> index;
  std::vector<GpuClass> out;
  for (int n = 0; n < cluster.node_count(); ++n) {
    const state::NodeState& node = *cluster.nodes()[n];
    for (size_t d = 0; d < node.devices.size(); ++d) {
      const mig::GpuMigModel& gpu = node.mig_models[d];
      std::string key = gpu.RulesKey();
      std::vector<int> intended(types);
      for (size_t t = 0; t < types; ++t) {
        intended[t] = cluster.Intended(n, static_cast<int>(d), static_cast<int>(t));
        key += "|" + std::to_string(intended[t]);
      }
      auto [it, added] = index.emplace(key, out.size());
      if (!added) {
        ++out[it->second].count;
        out[it->second].members.emplace_back(n, static_cast<int>(d));
        continue;
      }
      GpuClass c;
      c.model = &gpu;
      c.count = 1;
      c.members.emplace_back(n, static_cast<int>(d));
      c.size_by_type.assign(types, 0);
      c.spans.resize(types);
      const auto slices = static_cast<size_t>(gpu.memory_slices());
      std::vector<int64_t> best(slices + 1, 0);  // unbounded knapsack of intended sizes
      for (size_t t = 0; t < types; ++t) {
        if (intended[t] < 0) continue;
        const auto size = static_cast<size_t>(gpu.profiles()[intended[t]].placements.front().size);
        c.size_by_type[t] = static_cast<int64_t>(size);
        c.spans[t] = PlacementSpans(gpu, intended[t]);
        for (size_t s = size; s <= slices; ++s) {
          best[s] = std::max(best[s], best[s - size] + static_cast<int64_t>(size));
        }
      }
      c.fill = best[slices];
      out.push_back(std::move(c));
    }
  }
  return out;
}

void BranchCallback(glp_tree* tree, void* info) {
  auto* limit = static_cast<BranchLimit*>(info);
  if (const int best = glp_ios_best_node(tree); best != 0) {
    const double bound = glp_ios_node_bound(tree, best);
    limit->bound = limit->seen ? std::min(limit->bound, bound) : bound;
    limit->seen = true;
  }
  int active = 0;
  int current = 0;
  int total = 0;
  glp_ios_tree_size(tree, &active, &current, &total);
  if (total > limit->nodes) glp_ios_terminate(tree);
}

bool BranchAndBound(glp_prob* lp, BranchLimit& limit) {
  glp_iocp branch;
  glp_init_iocp(&branch);
  branch.msg_lev = GLP_MSG_OFF;
  branch.cb_func = BranchCallback;
  branch.cb_info = &limit;
  glp_intopt(lp, &branch);
  const int status = glp_mip_status(lp);
  return status == GLP_OPT || status == GLP_FEAS;
}

SteadyProblem SteadyItemsAndGroups(const MigCluster& cluster, const std::vector<Arrival>& arrivals,
                                   size_t warmup) {
  const size_t n = arrivals.size();
  std::vector<double> times(n);
  for (size_t i = 0; i < n; ++i) times[i] = arrivals[i].time;
  std::vector<Item> items;
  items.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    const Arrival& a = arrivals[k];
    // Resident just before arrival i (the protocol's measure) when i > k and its departure is
    // later than t_i: count the measured such i.
    const size_t from = std::max(warmup, k + 1);
    const auto until = static_cast<size_t>(
        std::lower_bound(times.begin(), times.end(), a.time + a.lifetime) - times.begin());
    const double measured = until > from ? static_cast<double>(until - from) : 0;
    items.push_back(Item{a.type, cluster.workload().types[static_cast<size_t>(a.type)].count,
                         measured, k >= warmup ? 1.0 : 0.0});
  }
  // The resident set right after placing arrival j is {k <= j: departs after t_j}. It only
  // grows until a departure, so the sets just before each departure dominate the rest.
  std::vector<std::vector<int>> groups;
  std::set<std::pair<double, int>> resident;  // (departure, arrival)
  for (size_t j = 0; j < n; ++j) {
    while (!resident.empty() && resident.begin()->first <= times[j])
      resident.erase(resident.begin());
    resident.emplace(times[j] + arrivals[j].lifetime, static_cast<int>(j));
    if (j + 1 < n && resident.begin()->first > times[j + 1]) continue;
    std::vector<int> group;
    group.reserve(resident.size());
    for (const auto& r : resident) group.push_back(r.second);
    groups.push_back(std::move(group));
  }
  return SteadyProblem{std::move(items), std::move(groups)};
}

}  // namespace tessera::sim::mig_replay
