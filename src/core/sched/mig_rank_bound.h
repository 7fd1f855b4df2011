#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/mig/layout_table.h"
#include "core/sched/mig_placement.h"
#include "core/sched/request.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// MIG placeability drops are sums of weights times small integers: NodeRank::bucket counts them
// in steps of this, which rounds away float noise.
inline constexpr double kPlaceabilityQuantum = 1e-6;

// A floor under the bucket a MIG node can rank in for one pod (NodeRank::bucket: the MIG plan's
// placeability drop), and a ceiling over its score for ties, read from the node's summaries
// without planning: the filter skips a node that already ranks after the best node found so
// far (branch and bound, as RankBound does for shared GPUs).
//
// Why it holds. A plan adds instances to some GPUs; the node's drop is the sum of the GPUs'
// drops. A GPU in layout L that gets j of the instances ends in a layout reachable from L by j
// legal one-instance steps (LayoutTable::Steps) of profiles eligible for the pod, so its drop is
// at least placeability(L) minus the most placeability any such layout keeps (exact layouts,
// so the stranded term is counted as it is). The node's floor is the least sum of those GPU
// floors over the ways to spread the pod's instances over its GPUs.
//
// Without larger profiles the plan first takes the least memory any plan can. When every
// instance asks the same, that least memory is the least, over the same spreads, of the least
// memory j steps take on each GPU, and each GPU's part of the plan is then one of those
// least-memory ways: so the floor is taken over them only. And a plan that reaches that floor
// keeps, on each GPU, the most placeability a least-memory way can, and among those takes the
// way GpuMigModel::Arrange prefers (larger placeable profile, fewer compute slices): its cores
// (with its memory, what its score NodeScoreAdding adds) are at most the most cores of the ways
// tied there. Otherwise the score's ceiling counts every instance on the largest profile
// eligible for it.
class MigRankBound {
 public:
  // Pods with more MIG instances than this are not bounded.
  static constexpr int32_t kMaxInstances = 4;

  MigRankBound() = default;  // bounds nothing
  // For a pod whose MIG plans use `goal` and are made from the nodes' summaries (the goal
  // admits every open MIG GPU, and the pod's mode takes MIG GPUs).
  MigRankBound(const PodRequest& request, const MigGoal& goal);

  bool enabled() const { return weights_ != nullptr; }

  struct NodeBound {
    // The lowest bucket the node can rank in if the pod fits it (infinity where its open GPUs
    // cannot take the pod's instances).
    double lowest_bucket;
    float highest_score;  // the highest score the pod can give it
  };
  // nullopt where this bound says nothing: nodes not all in MIG mode, summaries not current, a
  // GPU without a complete layout table, negative weights. Where the lowest bucket is above
  // `beat` (the bucket to beat), the score is not worked out (0).
  std::optional<NodeBound> Bound(const state::NodeState& node,
                                 double beat = std::numeric_limits<double>::infinity()) const;
  // Whether no plan can place the pod's instances on `node` (its lowest bucket is infinite):
  // then the node can be refused without planning.
  bool RulesOut(const state::NodeState& node) const {
    const std::optional<NodeBound> bound = Bound(node, -std::numeric_limits<double>::infinity());
    return bound && bound->lowest_bucket == std::numeric_limits<double>::infinity();
  }

 private:
  // What j more instances can leave on a GPU in one state.
  // Of the ways j instances can take the least memory on a GPU, the ones GpuMigModel::Arrange
  // would choose among: what they leave, and their most core shares.
  struct Kept {
    double left = 0;       // placeability
    int32_t largest = 0;   // memory of the largest profile still placeable
    uint32_t compute = 0;  // compute slices in use
    int32_t cores = 0;
  };
  struct Reach {
    double most_left;      // the most placeability kept; NaN until asked, -inf: j do not fit
    int32_t least_memory;  // the least MiB the j instances' profiles take
    Kept kept;             // among the ways of taking it
  };
  static void KeepArrangement(const Kept& way, Kept* kept);
  // What j of the instances add on a GPU in one state, as the node's knapsack reads it.
  struct Term {
    double any;           // the floor of its drop (infinity: j do not fit)
    double least_memory;  // the floor among the ways of the least memory
    int32_t memory;       // that least memory
    int32_t cores;        // the most cores of the ways that reach that floor
  };
  // Over the ways to spread instances on a node's GPUs, those of the least memory.
  struct Spread {
    int64_t memory = std::numeric_limits<int64_t>::max();
    double least_memory_drop = std::numeric_limits<double>::infinity();
    int64_t cores = 0;
  };
  using Spreads = std::array<Spread, kMaxInstances + 1>;  // [instances placed]
  // Calls f(std::integral_constant<int32_t, instances_>{}): the knapsacks below with their
  // instance count fixed at compile time, so that their loops unroll.
  template <typename F>
  decltype(auto) WithInstanceCount(F&& f) const;
  // The least sum of the GPUs' floors (Term::any, or Term::least_memory) over the spreads.
  template <int32_t kInstances>
  static double LeastSum(std::span<const Term* const> gpus, bool least_memory);
  // The spreads of the least memory over GPUs (each GPU's terms).
  template <int32_t kInstances>
  static void AddLeastMemory(std::span<const Term* const> gpus, Spreads* spread);
  // Per set of MIG rules (a layout table) met in this decision.
  struct Rules {
    const void* identity = nullptr;
    const mig::LayoutTable* table = nullptr;  // nullptr: no bound on GPUs of these rules
    const std::vector<double>* weights = nullptr;
    mig::StrandedValue stranded;
    uint32_t all_slices = 0;  // mask of the model's memory slices
    uint32_t compute_slices = 0;
    uint32_t eligible = 0;  // profiles some instance of the pod may take
    uint32_t positive = 0;  // allowed profiles of weight > 0 (the stranded term's)
    uint32_t allowed = 0;
    std::array<int32_t, mig::kMaxProfiles> memory{};  // per profile, MiB
    std::array<int32_t, mig::kMaxProfiles> cores{};   // per profile, core share
    int64_t most_mem = 0;              // the instances' largest eligible profiles: MiB, summed
    int64_t most_cores = 0;            // and core shares
    std::vector<double> placeability;  // per state, as GpuMigModel::Assess; NaN until asked
    std::array<std::vector<Reach>, kMaxInstances> reach;  // [j - 1][state]
    std::vector<Term> terms;  // [state * instances + j - 1]; NaN until asked
  };
  Rules& RulesOf(const void* identity, const mig::GpuMigModel& model) const {
    if (last_ < rules_.size() && rules_[last_].identity == identity) return rules_[last_];
    return FindRules(identity, model);
  }
  Rules& FindRules(const void* identity, const mig::GpuMigModel& model) const;
  void Prepare(const mig::GpuMigModel& model, Rules* rules) const;
  double Placeability(Rules& rules, uint32_t state) const;
  const Reach& ReachOf(Rules& rules, uint32_t state, int32_t instances) const;
  const Term* TermsOf(Rules& rules, uint32_t state) const {
    Term* terms = &rules.terms[static_cast<size_t>(state) * instances_];
    if (terms[0].any == terms[0].any) return terms;  // not NaN: worked out before
    FillTerms(rules, state, terms);
    return terms;
  }
  void FillTerms(Rules& rules, uint32_t state, Term* terms) const;
  bool SameGpusAsLast(const state::NodeState& node) const;
  int32_t LargestPlaceable(const Rules& rules, uint32_t state) const;
  float LooseScore(const state::NodeState& node) const;

  struct Instances {  // one container's instances
    int32_t mem_mib;
    int32_t mem_percent;
    int32_t cores;
    int32_t count;
  };
  std::vector<Instances> containers_;
  int32_t instances_ = 0;
  bool larger_profiles_ = false;
  // Every instance asks the same (then the least memory is exact).
  bool alike_ = false;
  const MigWeights* weights_ = nullptr;
  // Working memory of one decision, filled as nodes are met (the cycle state is per thread).
  mutable std::vector<Rules> rules_;
  mutable size_t last_ = 0;
  // The last node's open GPUs (rules, layout; nullptr where not open) and its spreads.
  mutable std::vector<std::pair<const void*, int32_t>> last_gpus_;
  mutable std::vector<const Term*> gpu_terms_;  // the node's open GPUs' terms
  mutable Spread last_spread_;
  mutable bool last_known_ = false;
};

}  // namespace tessera::sched
