#include "sim/mig_replay/pattern_schedule.h"

#include <glpk.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "sim/mig_replay/departure_aligned.h"
#include "sim/mig_replay/placement_bound.h"
#include "sim/mig_replay/placement_problem.h"
#include "sim/mig_replay/protocol.h"
#include "sim/replay/glpk_problem.h"

namespace tessera::sim::mig_replay {
namespace {

// The pricing problem of one class: the best schedule of one GPU of it over the whole stream
// (binary x per item and span; per resident group and memory slice at most one instance; the
// class's fill per group; at most the item's count per item), for per-item prices.
class SingleGpuPricing {
 public:
  SingleGpuPricing(const GpuClass& gpu, const std::vector<Item>& items,
                   const std::vector<std::vector<int>>& groups)
      : lp_(glp_create_prob(), &glp_delete_prob) {
    glp_set_obj_dir(lp_.get(), GLP_MAX);
    std::vector<int> rows{0};
    std::vector<int> cols{0};
    std::vector<double> values{0};
    first_.assign(items.size(), 0);
    for (size_t k = 0; k < items.size(); ++k) {
      const auto t = static_cast<size_t>(items[k].type);
      if (items[k].served_weight <= 0 || gpu.spans[t].empty()) continue;
      first_[k] = static_cast<int>(column_item_.size()) + 1;
      for (size_t m = 0; m < gpu.spans[t].size(); ++m) {
        column_item_.push_back(static_cast<int>(k));
        column_span_.push_back(static_cast<int>(m));
        column_value_.push_back(items[k].served_weight * static_cast<double>(gpu.size_by_type[t]));
      }
    }
    const int columns = static_cast<int>(column_item_.size());
    if (columns == 0) return;
    glp_add_cols(lp_.get(), columns);
    for (int col = 1; col <= columns; ++col) glp_set_col_kind(lp_.get(), col, GLP_BV);
    auto add_row = [&](double upper) {
      const int row = glp_add_rows(lp_.get(), 1);
      glp_set_row_bnds(lp_.get(), row, GLP_UP, 0, upper);
      return row;
    };
    for (size_t k = 0; k < items.size(); ++k) {
      const auto t = static_cast<size_t>(items[k].type);
      if (first_[k] == 0 || static_cast<size_t>(items[k].count) >= gpu.spans[t].size()) continue;
      const int row = add_row(items[k].count);
      for (size_t m = 0; m < gpu.spans[t].size(); ++m) {
        rows.push_back(row), cols.push_back(first_[k] + static_cast<int>(m)), values.push_back(1);
      }
    }
    for (const std::vector<int>& group : groups) {
      std::vector<std::vector<int>> by_slice(gpu.model->memory_slices());
      std::vector<std::pair<int, double>> fill;
      for (const int k : group) {
        if (first_[static_cast<size_t>(k)] == 0) continue;
        const auto t = static_cast<size_t>(items[static_cast<size_t>(k)].type);
        for (size_t m = 0; m < gpu.spans[t].size(); ++m) {
          const int col = first_[static_cast<size_t>(k)] + static_cast<int>(m);
          for (uint32_t bits = gpu.spans[t][m]; bits != 0; bits &= bits - 1) {
            by_slice[static_cast<size_t>(std::countr_zero(bits))].push_back(col);
          }
          fill.emplace_back(col, static_cast<double>(gpu.size_by_type[t]));
        }
      }
      for (const std::vector<int>& slice : by_slice) {
        if (slice.size() < 2) continue;
        const int row = add_row(1);
        for (const int col : slice) rows.push_back(row), cols.push_back(col), values.push_back(1);
      }
      if (fill.size() < 2) continue;
      const int row = add_row(static_cast<double>(gpu.fill));
      for (const auto& [col, size] : fill) {
        rows.push_back(row), cols.push_back(col), values.push_back(size);
      }
    }
    glp_load_matrix(lp_.get(), static_cast<int>(rows.size()) - 1, rows.data(), cols.data(),
                    values.data());
  }

  // The best pattern found for `price` (per item), leaving out `excluded` items: its value less
  // the prices it pays, its value, and its columns.
  struct Pattern {
    double reduced = 0;
    double value = 0;
    std::vector<int> columns;  // 0-based
  };
  Pattern Best(const std::vector<double>& price, const std::vector<char>& excluded,
               int branch_nodes) {
    Pattern out;
    const int columns = static_cast<int>(column_item_.size());
    if (columns == 0) return out;
    int open = 0;
    for (int col = 1; col <= columns; ++col) {
      const auto k = static_cast<size_t>(column_item_[static_cast<size_t>(col - 1)]);
      const double reduced = column_value_[static_cast<size_t>(col - 1)] - price[k];
      const bool useful = reduced > 1e-9 && excluded[k] == 0;
      glp_set_obj_coef(lp_.get(), col, useful ? reduced : 0);
      if (useful) {
        glp_set_col_bnds(lp_.get(), col, GLP_DB, 0, 1);
        ++open;
      } else {
        glp_set_col_bnds(lp_.get(), col, GLP_FX, 0, 0);
      }
    }
    if (open == 0) return out;
    glp_smcp simplex;
    glp_init_smcp(&simplex);
    simplex.msg_lev = GLP_MSG_OFF;
    if (glp_simplex(lp_.get(), &simplex) != 0 || glp_get_status(lp_.get()) != GLP_OPT) {
      return out;
    }
    BranchLimit limit{branch_nodes, glp_get_obj_val(lp_.get()), false};
    if (BranchAndBound(lp_.get(), limit)) {
      out.reduced = glp_mip_obj_val(lp_.get());
      for (int col = 1; col <= columns; ++col) {
        if (glp_mip_col_val(lp_.get(), col) > 0.5) {
          out.columns.push_back(col - 1);
          out.value += column_value_[static_cast<size_t>(col - 1)];
        }
      }
    }
    return out;
  }

  int item_of(int column) const { return column_item_[static_cast<size_t>(column)]; }
  int span_of(int column) const { return column_span_[static_cast<size_t>(column)]; }

 private:
  replay::GlpkProblem lp_;
  std::vector<int> first_;
  std::vector<int> column_item_;
  std::vector<int> column_span_;
  std::vector<double> column_value_;
};

// The master: per class a row (at most its GPU count of patterns), per item a row (at most its
// count of instances); a column per pattern, worth its value.
class Master {
 public:
  Master(const std::vector<GpuClass>& classes, const std::vector<Item>& items)
      : lp_(glp_create_prob(), &glp_delete_prob), items_(static_cast<int>(items.size())) {
    glp_set_obj_dir(lp_.get(), GLP_MAX);
    glp_add_rows(lp_.get(), items_ + static_cast<int>(classes.size()));
    for (int k = 0; k < items_; ++k) {
      glp_set_row_bnds(lp_.get(), k + 1, GLP_UP, 0, items[static_cast<size_t>(k)].count);
    }
    for (size_t c = 0; c < classes.size(); ++c) {
      glp_set_row_bnds(lp_.get(), items_ + static_cast<int>(c) + 1, GLP_UP, 0, classes[c].count);
    }
  }

  void Add(size_t gpu_class, double value, const std::map<int, int>& instances,
           std::vector<std::pair<int, int>> columns) {
    const int col = glp_add_cols(lp_.get(), 1);
    glp_set_col_bnds(lp_.get(), col, GLP_LO, 0, 0);
    glp_set_obj_coef(lp_.get(), col, value);
    std::vector<int> index{0};
    std::vector<double> count{0};
    for (const auto& [k, n] : instances) index.push_back(k + 1), count.push_back(n);
    index.push_back(items_ + static_cast<int>(gpu_class) + 1), count.push_back(1);
    glp_set_mat_col(lp_.get(), col, static_cast<int>(index.size()) - 1, index.data(), count.data());
    patterns_.push_back(Pattern{gpu_class, std::move(columns)});
  }

  // The LP's prices per item and per class; false when it has no optimum.
  bool Price(std::vector<double>& item_price, std::vector<double>& class_price) {
    if (!Simplex()) return false;
    for (int k = 0; k < items_; ++k) {
      item_price[static_cast<size_t>(k)] = std::max(0.0, glp_get_row_dual(lp_.get(), k + 1));
    }
    for (size_t c = 0; c < class_price.size(); ++c) {
      class_price[c] = std::max(0.0, glp_get_row_dual(lp_.get(), items_ + static_cast<int>(c) + 1));
    }
    return true;
  }

  // How many of each pattern the master takes in whole patterns (empty: none found). A pod of
  // several instances may be taken in part (the policy then fills its room, MakePatternPolicy):
  // asking for all of a pod's instances or none (a binary per pod) left GLPK's branch and bound
  // with far worse whole solutions in its nodes (on one node of 8 A100s, `multi-small`: 8 to 11%
  // served against 65 to 71%).
  std::vector<int> Whole(int branch_nodes) {
    if (patterns_.empty() || !Simplex()) return {};
    const int columns = static_cast<int>(patterns_.size());
    for (int col = 1; col <= columns; ++col) glp_set_col_kind(lp_.get(), col, GLP_IV);
    BranchLimit limit{branch_nodes, glp_get_obj_val(lp_.get()), false};
    if (!BranchAndBound(lp_.get(), limit)) return {};
    std::vector<int> out(patterns_.size());
    for (int col = 1; col <= columns; ++col) {
      out[static_cast<size_t>(col - 1)] =
          static_cast<int>(std::lround(glp_mip_col_val(lp_.get(), col)));
    }
    return out;
  }

  struct Pattern {
    size_t gpu_class = 0;
    std::vector<std::pair<int, int>> columns;  // (item, span index)
  };
  const std::vector<Pattern>& patterns() const { return patterns_; }

 private:
  bool Simplex() {
    glp_smcp simplex;
    glp_init_smcp(&simplex);
    simplex.msg_lev = GLP_MSG_OFF;
    return glp_simplex(lp_.get(), &simplex) == 0 && glp_get_status(lp_.get()) == GLP_OPT;
  }

  replay::GlpkProblem lp_;
  int items_;
  std::vector<Pattern> patterns_;
};

// One instance of a pod the plan holds whole: its memory slices, and while the pod is resident.
struct Reservation {
  double from = 0;
  double to = 0;
  uint32_t span = 0;
};

class PatternPolicy : public MigPolicy {
 public:
  PatternPolicy(const PatternPlan& plan, const std::vector<Arrival>* fill_from) : plan_(plan) {
    if (fill_from == nullptr) return;
    // The filler is departure_aligned.h's placer, kept off the slices a planned pod needs.
    filler_ = MakeDepartureAlignedPolicy(
        *fill_from, nullptr, [this](int node, int device, double from, double to) {
          uint32_t kept = 0;
          for (const Reservation& r :
               reserved_[static_cast<size_t>(node)][static_cast<size_t>(device)]) {
            if (r.from < to && r.to > from) kept |= r.span;
          }
          return kept;
        });
    arrivals_ = fill_from;
  }
  std::string_view Name() const override { return kOfflinePatterns; }

  Result<replay::PlaceOutcome> Place(MigCluster& cluster, const int& type, const std::string& key,
                                     std::mt19937_64& rng) override {
    const std::optional<size_t> index = ArrivalIndex(key);
    if (!index || *index >= plan_.size()) return replay::PlaceOutcome::kRefused;
    if (Whole(cluster, *index, type)) return AsPlanned(cluster, *index, type, key);
    if (!filler_) return replay::PlaceOutcome::kRefused;
    // A pod the plan does not hold whole goes where no pod the plan holds whole needs the
    // memory slices while it is resident, so every planned pod still finds its span.
    if (reserved_.empty()) Reserve(cluster);
    return filler_->Place(cluster, type, key, rng);
  }

 private:
  // The plan holds every instance of the pod, on one node.
  bool Whole(const MigCluster& cluster, size_t index, int type) const {
    const std::vector<PlannedInstance>& planned = plan_[index];
    if (planned.empty() ||
        static_cast<int>(planned.size()) != cluster.workload().types[type].count) {
      return false;
    }
    return std::all_of(planned.begin(), planned.end(),
                       [&](const PlannedInstance& at) { return at.node == planned.front().node; });
  }

  Result<replay::PlaceOutcome> AsPlanned(MigCluster& cluster, size_t index, int type,
                                         const std::string& key) const {
    const std::vector<PlannedInstance>& planned = plan_[index];
    const int n = planned.front().node;
    const state::NodeState& node = *cluster.nodes()[n];
    std::vector<mig::Layout> layouts;
    for (const auto& usage : node.usage) layouts.push_back(usage.layout);
    std::vector<InstancePick> picks;
    for (const PlannedInstance& at : planned) {
      const auto d = static_cast<size_t>(at.device);
      const mig::GpuMigModel& gpu = node.mig_models[d];
      const int intended = cluster.Intended(n, at.device, type);
      if (intended < 0) return replay::PlaceOutcome::kRefused;
      std::optional<InstancePick> pick;
      for (const int profile : CoveringProfiles(gpu, intended)) {  // the intended one included
        pick = AtSpan(gpu, layouts[d], profile, at.span);
        if (pick) break;
      }
      if (!pick) return replay::PlaceOutcome::kRefused;
      pick->device = at.device;
      gpu.Place(layouts[d], pick->profile, pick->placement);
      picks.push_back(*pick);
    }
    cluster.Commit(key, n, picks);
    return replay::PlaceOutcome::kPlaced;
  }

  // The memory slices the pods the plan holds whole need, per node and GPU, and when.
  void Reserve(const MigCluster& cluster) {
    reserved_.resize(static_cast<size_t>(cluster.node_count()));
    for (int n = 0; n < cluster.node_count(); ++n) {
      reserved_[static_cast<size_t>(n)].resize(cluster.nodes()[n]->usage.size());
    }
    for (size_t i = 0; i < plan_.size() && i < arrivals_->size(); ++i) {
      const Arrival& a = (*arrivals_)[i];
      if (!Whole(cluster, i, a.type)) continue;
      for (const PlannedInstance& at : plan_[i]) {
        reserved_[static_cast<size_t>(at.node)][static_cast<size_t>(at.device)].push_back(
            Reservation{a.time, a.time + a.lifetime, at.span});
      }
    }
  }

  const PatternPlan& plan_;
  const std::vector<Arrival>* arrivals_ = nullptr;
  std::unique_ptr<MigPolicy> filler_;
  std::vector<std::vector<std::vector<Reservation>>> reserved_;  // [node][device]
};

}  // namespace

PatternPlan SteadyPatternPlan(const MigCluster& cluster, const std::vector<Arrival>& arrivals,
                              size_t warmup, const PatternOptions& options) {
  PatternPlan plan(arrivals.size());
  const replay::GlpkEnvironment environment;
  const int terminal = glp_term_out(GLP_OFF);
  const SteadyProblem problem = SteadyItemsAndGroups(cluster, arrivals, warmup);
  const std::vector<GpuClass> classes = Classes(cluster);
  {
    std::vector<SingleGpuPricing> pricing;
    pricing.reserve(classes.size());
    for (const GpuClass& c : classes) pricing.emplace_back(c, problem.items, problem.groups);
    Master master(classes, problem.items);
    std::vector<double> price(problem.items.size(), 0);
    std::vector<double> class_price(classes.size(), 0);
    for (int round = 0; round < options.rounds; ++round) {
      bool added = false;
      for (size_t c = 0; c < classes.size(); ++c) {
        // A pattern per GPU of the class, each without the requests of those before it: the
        // round adds a whole schedule of the class, not one GPU's.
        std::vector<char> excluded(problem.items.size(), 0);
        for (int g = 0; g < classes[c].count; ++g) {
          SingleGpuPricing::Pattern pattern =
              pricing[c].Best(price, excluded, options.pricing_nodes);
          if (pattern.reduced - class_price[c] <= 1e-6) break;
          std::map<int, int> instances;
          std::vector<std::pair<int, int>> columns;
          for (const int col : pattern.columns) {
            const int k = pricing[c].item_of(col);
            ++instances[k];
            columns.emplace_back(k, pricing[c].span_of(col));
            excluded[static_cast<size_t>(k)] = 1;
          }
          master.Add(c, pattern.value, instances, std::move(columns));
          added = true;
        }
      }
      if (!added || !master.Price(price, class_price)) break;
    }
    const std::vector<int> taken = master.Whole(options.master_nodes);
    std::vector<int> next_member(classes.size(), 0);
    std::vector<int> placed(problem.items.size(), 0);
    for (size_t p = 0; p < taken.size(); ++p) {
      const Master::Pattern& pattern = master.patterns()[p];
      const GpuClass& gpu_class = classes[pattern.gpu_class];
      for (int copy = 0; copy < taken[p]; ++copy) {
        const int member = next_member[pattern.gpu_class]++;
        if (member >= gpu_class.count) break;
        const auto [node, device] = gpu_class.members[static_cast<size_t>(member)];
        for (const auto& [k, m] : pattern.columns) {
          const auto item = static_cast<size_t>(k);
          if (placed[item] >= problem.items[item].count) continue;
          ++placed[item];
          const auto type = static_cast<size_t>(problem.items[item].type);
          plan[item].push_back(
              PlannedInstance{node, device, gpu_class.spans[type][static_cast<size_t>(m)]});
        }
      }
    }
  }
  glp_term_out(terminal);
  return plan;
}

std::unique_ptr<MigPolicy> MakePatternPolicy(const PatternPlan& plan,
                                             const std::vector<Arrival>* fill_from) {
  return std::make_unique<PatternPolicy>(plan, fill_from);
}

}  // namespace tessera::sim::mig_replay
