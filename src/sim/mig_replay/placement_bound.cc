#include "sim/mig_replay/placement_bound.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "sim/mig_replay/placement_problem.h"
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
  auto [items, groups] = SteadyItemsAndGroups(cluster, arrivals, warmup);
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
