#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/sched/fit.h"
#include "core/sched/mig_demand.h"
#include "core/sched/preferences.h"
#include "core/sched/request.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// Arrangements already scored in one scheduling decision: a GPU's answer depends only on its
// rules (layout table), its layout and the instances asked of it, and GPUs in the same state
// recur across nodes even when the nodes differ. Valid for one decision (one set of weights);
// not shared between threads.
class MigArrangeCache {
 public:
  // Up to kMaxKeyDemands instances per GPU are cached (no allocation per lookup); more are
  // arranged every time.
  static constexpr size_t kMaxKeyDemands = 4;
  struct Entry {
    bool fits = false;
    mig::ArrangeScore score;
    int64_t cores = 0;  // the chosen profiles' core shares, summed (score.memory is their MiB)
    // The arrangement itself (profile and placement per instance, in the demands' order), so
    // that the chosen plan is not arranged a second time; `choices` holds it beyond
    // kMaxKeyDemands (the uncached case).
    std::array<mig::InstanceChoice, kMaxKeyDemands> first{};
    std::vector<mig::InstanceChoice> choices;
    const mig::InstanceChoice& Choice(size_t i) const {
      return choices.empty() ? first[i] : choices[i];
    }
  };
  const Entry& Get(const mig::GpuMigModel& model, const mig::Layout& base,
                   const std::vector<mig::InstanceDemand>& demands, const mig::ArrangeGoal& goal);
  // The same for a GPU whose layout is state `layout_id` of the table `rules` (its
  // state::GpuSummary): the key is the index, and `model` and `base` are read only to arrange
  // what is not cached yet. `layout_id` < 0 keys by `base`, as above.
  const Entry& Get(const void* rules, const mig::GpuMigModel& model, const mig::Layout& base,
                   int32_t layout_id, const std::vector<mig::InstanceDemand>& demands,
                   const mig::ArrangeGoal& goal);
  size_t size() const { return entries_.size() + by_id_.size(); }

  // The goal for GPUs of one set of rules (their weights looked up once per decision, not once
  // per GPU). `rules` is model.RulesIdentity(), given where the caller has it.
  const mig::ArrangeGoal& GoalFor(const mig::GpuMigModel& model, const MigWeights& weights,
                                  bool allow_larger_profiles);
  const mig::ArrangeGoal& GoalFor(const void* rules, const mig::GpuMigModel& model,
                                  const MigWeights& weights, bool allow_larger_profiles);

 private:
  // A GPU by its layout, or (IdKey, smaller and cheaper to hash) by the layout's index in its
  // rules' table.
  struct Key {
    const void* rules;
    mig::Layout layout;
    std::array<mig::InstanceDemand, kMaxKeyDemands> demands;
    uint32_t count;
    bool operator==(const Key&) const = default;
  };
  struct IdKey {
    const void* rules;
    int32_t layout_id;
    uint32_t count;
    std::array<mig::InstanceDemand, kMaxKeyDemands> demands;
    bool operator==(const IdKey&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& key) const;
    size_t operator()(const IdKey& key) const;
  };
  // Arranges `demands` on `base` into `entry` (a new entry of a map, or scratch_).
  static void Fill(const mig::GpuMigModel& model, const mig::Layout& base,
                   const std::vector<mig::InstanceDemand>& demands, const mig::ArrangeGoal& goal,
                   Entry* entry);
  std::unordered_map<Key, Entry, KeyHash> entries_;
  std::unordered_map<IdKey, Entry, KeyHash> by_id_;
  Entry scratch_;
  std::vector<std::pair<const void*, mig::ArrangeGoal>> goals_;  // few: one per GPU model
};

// PlanMigPlacement's working space, kept from node to node within one decision so that planning
// a node allocates nothing once it is warm. Not shared between threads.
struct MigPlanBuffers {
  std::vector<std::pair<int, const ContainerRequest*>> instances;  // (slot, request)
  std::vector<int> devices;
  std::vector<std::vector<mig::InstanceDemand>> pending;
  std::vector<std::vector<int>> owners;
  std::vector<int> choice;
  std::vector<mig::ArrangeGoal> goals;    // per device, with a goal
  std::vector<mig::ArrangeScore> before;  // per device: the GPU as it is
  std::vector<mig::ArrangeScore> after;   // per device: with this plan's instances
  std::vector<std::vector<mig::InstanceDemand>> best_pending;
  std::vector<std::vector<int>> best_owners;
};

class MigPlanMemo;  // below

// The demand-aware goal of MIG placement (docs/placement.md): keep the node's placeability —
// the expected number of future requests, drawn from the demand mix, it could still take —
// as high as possible.
struct MigGoal {
  const MigWeights* weights = nullptr;
  bool allow_larger_profiles = false;
  MigArrangeCache* cache = nullptr;   // optional, per decision
  MigPlanBuffers* buffers = nullptr;  // optional, per decision
  MigPlanMemo* plans = nullptr;       // optional, per decision (with admits_open_mig_gpus)
  // The pod admits every open MIG GPU (state::GpuSummary::open): no GPU type or UUID
  // filter, no exclusive use, a mode that takes MIG GPUs. The plan then chooses GPUs from the
  // node's summaries alone (AdmitsOpenMigGpus).
  bool admits_open_mig_gpus = false;
};

// Whether a pod with these preferences admits every open MIG GPU (MigGoal::admits_open_mig_gpus).
bool AdmitsOpenMigGpus(const PodPreferences& prefs);

// A placement of all of a pod's MIG instances on one node.
struct MigPlan {
  SlotAssignments slots;         // empty when the plan was asked for without them
  double placeability_drop = 0;  // the node's placeability before minus after
  int64_t memory = 0;            // MiB of the chosen profiles
  int32_t largest_gain = 0;      // change in the sum over GPUs of the largest placeable profile
  int gpus_used = 0;
  // What the assignments add up to, slots or not: instances, and the chosen profiles' core
  // shares and MiB (as NodeScore counts them).
  int32_t instances = 0;
  int64_t cores = 0;
  int64_t assigned_mem = 0;
};

// A decision's MIG plans by node, for nodes planned from their summaries: the plan's figures
// depend only on the pod (one per decision) and the admitted GPUs' rules and layouts, in device
// order, so nodes alike in those (whatever their host CPU, names, UUIDs or labels, which put
// them in different equivalence classes) share one search. Not shared between threads.
class MigPlanMemo {
 public:
  using Gpus = std::vector<std::pair<const void*, int32_t>>;  // (rules, layout_id) per GPU
  // Whether asking is still worth it: after the first lookups of a decision, only while at
  // least one in four hits (a cluster whose nodes all differ would only pay for the keys).
  bool Worthwhile() const { return lookups_ < 64 || hits_ * 4 >= lookups_; }
  // The node's key in probe(), or false when a GPU has no table state (not memoised).
  bool Describe(const state::NodeState& node);
  // The plan for probe()'s key, when known (an empty optional: the pod fits nowhere on it).
  const std::optional<MigPlan>* Find() const;
  void Store(const std::optional<MigPlan>& plan);
  size_t size() const { return plans_.size(); }

 private:
  struct Hash {
    size_t operator()(const Gpus& gpus) const;
  };
  Gpus probe_;
  std::unordered_map<Gpus, std::optional<MigPlan>, Hash> plans_;
  mutable size_t lookups_ = 0;
  mutable size_t hits_ = 0;
};

// Exact joint placement of every instance of the pod over the node's MIG GPUs (those the pod's
// preferences admit). Without a goal: the first feasible plan (a pod that fits is never
// rejected). With a goal: the best plan by (least memory unless larger profiles are allowed,
// least placeability drop, largest placeable profiles kept, fewest GPUs, first in GPU order),
// searched exhaustively; GPUs with the same rules and the same layout are interchangeable, so
// only the first of them is tried for each instance. Beyond a search budget (pods with many
// instances on many GPUs) the best plan found so far is returned.
// `with_slots` off: the plan's figures without its per-container assignments (no allocation:
// the filter ranks most nodes without ever placing the pod there).
std::optional<MigPlan> PlanMigPlacement(const state::NodeState& node, const PodRequest& request,
                                        const PodPreferences& prefs, const MigGoal* goal,
                                        bool with_slots = true);

// The same without a goal: used when the container-by-container pass fails.
std::optional<SlotAssignments> JointMigSearch(const state::NodeState& node,
                                              const PodRequest& request,
                                              const PodPreferences& prefs);

// Whether every GPU of the node the pod may use (by its nvidia.com/vgpu-mode) is in MIG mode:
// then the placement is MIG placement alone and the goal-driven plan replaces HAMi's pass.
bool OnlyMigDevicesAdmitted(const state::NodeState& node, const PodPreferences& prefs);

}  // namespace tessera::sched
