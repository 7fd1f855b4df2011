#include "sim/mig_replay/placement_bound.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "sim/mig_replay/policy.h"
#include "sim/mig_replay/upper_bound.h"
#include "sim/replay/glpk_problem.h"

namespace tessera::sim::mig_replay {
namespace {

// Branch and bound on whole requests (Solve) where the stream is short: on 1-node fleets it takes
// up to 0.4 points off the LP in a few seconds; on 2-node ones it took nothing off in 200 nodes
// and cost up to 35 s a run, so the LP alone is kept there.
constexpr int kBranchNodes = 200;
constexpr size_t kBranchMaxRequests = 200;
int BranchNodes(size_t requests) { return requests <= kBranchMaxRequests ? kBranchNodes : 0; }

// Interchangeable GPUs: the same rules and the same intended profile for every request type.
struct GpuClass {
  const mig::GpuMigModel* model = nullptr;
  int count = 0;
  int64_t fill = 0;                          // most intended slices one GPU holds
  std::vector<int64_t> size_by_type;         // intended slices of one instance; 0: none
  std::vector<std::vector<uint32_t>> spans;  // per type: PlacementSpans
};

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
        continue;
      }
      GpuClass c;
      c.model = &gpu;
      c.count = 1;
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

// One request in the LP: its instances, and what one instance-slice of it is worth.
struct Item {
  int type = 0;
  int count = 1;
  double served_weight = 0;  // per intended slice held
  double accept_weight = 0;  // per whole request
};

// Stops GLPK's branch and bound after a fixed number of nodes (deterministic, unlike a time
// limit), keeping the smallest global bound it saw: every one is valid.
struct BranchLimit {
  int nodes = 0;
  double bound = 0;
  bool seen = false;
};

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

// Builds the LP over `items` with one set of capacity rows per group of items resident together
// and solves it for acceptance, then for served; with `branch_nodes`, then for served with each
// request accepted whole or not at all (a binary per request), by at most that many nodes of
// branch and bound.
PlacementLp Solve(const std::vector<GpuClass>& classes, const std::vector<Item>& items,
                  const std::vector<std::vector<int>>& groups, int branch_nodes) {
  PlacementLp out;
  const replay::GlpkEnvironment environment;
  replay::GlpkProblem lp(glp_create_prob(), &glp_delete_prob);
  glp_set_obj_dir(lp.get(), GLP_MAX);
  // Columns: per item, per class, per span; first[k][c] is the first of item k on class c.
  std::vector<std::vector<int>> first(items.size(), std::vector<int>(classes.size(), 0));
  int columns = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    for (size_t c = 0; c < classes.size(); ++c) {
      first[k][c] = columns + 1;
      columns += static_cast<int>(classes[c].spans[static_cast<size_t>(items[k].type)].size());
    }
  }
  if (columns == 0) return PlacementLp{0, 0, {}, {}, {}};
  glp_add_cols(lp.get(), columns);
  std::vector<double> served(static_cast<size_t>(columns) + 1, 0);
  std::vector<int> accept_cols;                     // per item with placements: its share accepted
  std::vector<int> accept_col_of(items.size(), 0);  // per item; 0: none
  std::vector<double> accept_weights;
  std::vector<int> rows{0};
  std::vector<int> cols{0};
  std::vector<double> values{0};
  auto add_row = [&](double upper) {
    const int row = glp_add_rows(lp.get(), 1);
    glp_set_row_bnds(lp.get(), row, GLP_UP, 0, upper);
    return row;
  };
  for (size_t k = 0; k < items.size(); ++k) {
    const Item& item = items[k];
    const auto t = static_cast<size_t>(item.type);
    int row = 0;
    for (size_t c = 0; c < classes.size(); ++c) {
      for (size_t m = 0; m < classes[c].spans[t].size(); ++m) {
        const int col = first[k][c] + static_cast<int>(m);
        glp_set_col_bnds(lp.get(), col, GLP_DB, 0, item.count);
        served[static_cast<size_t>(col)] =
            item.served_weight * static_cast<double>(classes[c].size_by_type[t]);
        if (row == 0) row = add_row(0);  // its instances: count x its accepted share
        rows.push_back(row), cols.push_back(col), values.push_back(1);
      }
    }
    if (row == 0) continue;
    glp_set_row_bnds(lp.get(), row, GLP_FX, 0, 0);
    const int share = glp_add_cols(lp.get(), 1);
    glp_set_col_bnds(lp.get(), share, GLP_DB, 0, 1);
    rows.push_back(row), cols.push_back(share), values.push_back(-item.count);
    accept_cols.push_back(share);
    accept_col_of[k] = share;
    accept_weights.push_back(item.accept_weight);
  }
  for (const std::vector<int>& group : groups) {
    for (size_t c = 0; c < classes.size(); ++c) {
      const GpuClass& gpu = classes[c];
      const auto capacity = static_cast<double>(gpu.count);
      std::vector<std::vector<int>> by_slice(gpu.model->memory_slices());
      std::vector<std::pair<int, double>> fill;
      for (const int k : group) {
        const auto t = static_cast<size_t>(items[static_cast<size_t>(k)].type);
        for (size_t m = 0; m < gpu.spans[t].size(); ++m) {
          const int col = first[static_cast<size_t>(k)][c] + static_cast<int>(m);
          for (uint32_t bits = gpu.spans[t][m]; bits != 0; bits &= bits - 1) {
            by_slice[static_cast<size_t>(std::countr_zero(bits))].push_back(col);
          }
          fill.emplace_back(col, static_cast<double>(gpu.size_by_type[t]));
        }
      }
      for (const std::vector<int>& slice : by_slice) {
        if (slice.empty()) continue;
        const int row = add_row(capacity);
        for (const int col : slice) rows.push_back(row), cols.push_back(col), values.push_back(1);
      }
      if (fill.empty()) continue;
      const int row = add_row(capacity * static_cast<double>(gpu.fill));
      for (const auto& [col, size] : fill) {
        rows.push_back(row), cols.push_back(col), values.push_back(size);
      }
    }
  }
  const auto objective = [&](bool served_objective) {
    for (int col = 1; col <= columns; ++col) {
      glp_set_obj_coef(lp.get(), col, served_objective ? served[static_cast<size_t>(col)] : 0);
    }
    for (size_t i = 0; i < accept_cols.size(); ++i) {
      glp_set_obj_coef(lp.get(), accept_cols[i], served_objective ? 0 : accept_weights[i]);
    }
  };
  objective(false);
  if (!replay::SolveQuietly(lp.get(), rows, cols, values, /*scale=*/true)) return out;
  out.accepted = glp_get_obj_val(lp.get());
  objective(true);
  // From the acceptance optimum's basis, which presolve left in place.
  glp_smcp simplex;
  glp_init_smcp(&simplex);
  simplex.msg_lev = GLP_MSG_OFF;
  const int terminal = glp_term_out(GLP_OFF);
  if (glp_simplex(lp.get(), &simplex) == 0 && glp_get_status(lp.get()) == GLP_OPT) {
    out.served = glp_get_obj_val(lp.get());
    out.accept_share.assign(items.size(), 0);
    out.preferred_span.assign(items.size(), 0);
    for (size_t k = 0; k < items.size(); ++k) {
      if (accept_col_of[k] != 0) {
        out.accept_share[k] = std::clamp(glp_get_col_prim(lp.get(), accept_col_of[k]), 0.0, 1.0);
      }
      const auto t = static_cast<size_t>(items[k].type);
      double most = 1e-9;
      for (size_t c = 0; c < classes.size(); ++c) {
        for (size_t m = 0; m < classes[c].spans[t].size(); ++m) {
          const double x = glp_get_col_prim(lp.get(), first[k][c] + static_cast<int>(m));
          if (x > most) {
            most = x;
            out.preferred_span[k] = classes[c].spans[t][m];
          }
        }
      }
    }
  }
  if (out.served >= 0 && branch_nodes > 0) {
    for (const int col : accept_cols) glp_set_col_kind(lp.get(), col, GLP_BV);
    BranchLimit limit{branch_nodes, out.served, false};
    glp_iocp branch;
    glp_init_iocp(&branch);
    branch.msg_lev = GLP_MSG_OFF;
    branch.cb_func = BranchCallback;
    branch.cb_info = &limit;
    const int rc = glp_intopt(lp.get(), &branch);
    const int status = glp_mip_status(lp.get());
    if (status == GLP_OPT || status == GLP_FEAS) {
      out.whole_accept.assign(items.size(), 0);
      for (size_t k = 0; k < items.size(); ++k) {
        if (accept_col_of[k] != 0) {
          out.whole_accept[k] = glp_mip_col_val(lp.get(), accept_col_of[k]) > 0.5 ? 1 : 0;
        }
      }
    }
    if (rc == 0 && status == GLP_OPT) {
      out.served = std::min(out.served, glp_mip_obj_val(lp.get()));
    } else if (limit.seen) {  // stopped: the best open node, or the best found if higher
      const bool found = status == GLP_FEAS;
      const double best = found ? std::max(limit.bound, glp_mip_obj_val(lp.get())) : limit.bound;
      out.served = std::min(out.served, best);
    }
  }
  glp_term_out(terminal);
  return out;
}

int64_t Floor(double lp) { return static_cast<int64_t>(std::floor(lp + 1e-6)); }

}  // namespace

std::vector<uint32_t> PlacementSpans(const mig::GpuMigModel& gpu, int intended) {
  std::vector<uint32_t> out;
  for (const model::Placement& p : gpu.profiles()[intended].placements) {
    out.push_back(mig::PlacementMask(p));
  }
  const size_t own = out.size();
  for (const int profile : CoveringProfiles(gpu, intended)) {
    for (const model::Placement& p : gpu.profiles()[profile].placements) {
      const uint32_t mask = mig::PlacementMask(p);
      const bool holds_one = std::any_of(out.begin(), out.begin() + static_cast<ptrdiff_t>(own),
                                         [&](uint32_t m) { return (m & mask) == m; });
      if (!holds_one && std::find(out.begin(), out.end(), mask) == out.end()) out.push_back(mask);
    }
  }
  return out;
}

PlacementLp SaturationPlacementLp(const MigCluster& cluster, const std::vector<Arrival>& arrivals) {
  std::vector<Item> items;
  std::vector<int> all;
  items.reserve(arrivals.size());
  for (const Arrival& a : arrivals) {
    all.push_back(static_cast<int>(items.size()));
    items.push_back(
        Item{a.type, cluster.workload().types[static_cast<size_t>(a.type)].count, 1, 1});
  }
  return Solve(Classes(cluster), items, {all}, BranchNodes(items.size()));
}

PlacementLp SteadyPlacementLp(const MigCluster& cluster, const std::vector<Arrival>& arrivals,
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
  return Solve(Classes(cluster), items, groups, BranchNodes(items.size()));
}

RunMetrics PlacementBoundSaturation(const MigCluster& cluster,
                                    const std::vector<Arrival>& arrivals) {
  RunMetrics m = UpperBoundSaturation(cluster, arrivals);
  const PlacementLp lp = SaturationPlacementLp(cluster, arrivals);
  // The LP counts slices: where demand counts in MiB (slices differ between GPUs), the upper
  // bound's served demand stands.
  if (lp.served >= 0 && cluster.UniformSlices()) {
    m.served_slices = std::min(m.served_slices, Floor(lp.served));
  }
  if (lp.accepted >= 0) m.accepted = std::min(m.accepted, Floor(lp.accepted));
  m.served_ratio = static_cast<double>(m.served_slices) /
                   static_cast<double>(std::max<int64_t>(1, cluster.demand_capacity()));
  return m;
}

RunMetrics PlacementBoundSteadyState(const MigCluster& cluster,
                                     const std::vector<Arrival>& arrivals, size_t warmup) {
  RunMetrics m = UpperBoundSteadyState(cluster, arrivals, warmup);
  if (arrivals.size() <= warmup) return m;
  const PlacementLp lp = SteadyPlacementLp(cluster, arrivals, warmup);
  const double scale = static_cast<double>(arrivals.size() - warmup) *
                       static_cast<double>(std::max<int64_t>(1, cluster.demand_capacity()));
  // The served sum is whole slices at whole instants (where demand counts in slices).
  if (lp.served >= 0 && cluster.UniformSlices()) {
    m.served_ratio = std::min(m.served_ratio, static_cast<double>(Floor(lp.served)) / scale);
  }
  if (lp.accepted >= 0) m.accepted = std::min(m.accepted, Floor(lp.accepted));
  return m;
}

}  // namespace tessera::sim::mig_replay
