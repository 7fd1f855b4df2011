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
  size_t size() const { return entries_.size(); }

  // The goal for GPUs of one set of rules (their weights looked up once per decision, not once
  // per GPU).
  const mig::ArrangeGoal& GoalFor(const mig::GpuMigModel& model, const MigWeights& weights,
                                  bool allow_larger_profiles);

 private:
  struct Key {
    const void* rules;
    mig::Layout layout;
    std::array<mig::InstanceDemand, kMaxKeyDemands> demands;
    uint32_t count;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& key) const;
  };
  std::unordered_map<Key, Entry, KeyHash> entries_;
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

// The demand-aware goal of MIG placement (docs/placement.md): keep the node's placeability —
// the expected number of future requests, drawn from the demand mix, it could still take —
// as high as possible.
struct MigGoal {
  const MigWeights* weights = nullptr;
  bool allow_larger_profiles = false;
  MigArrangeCache* cache = nullptr;   // optional, per decision
  MigPlanBuffers* buffers = nullptr;  // optional, per decision
};

// A placement of all of a pod's MIG instances on one node.
struct MigPlan {
  SlotAssignments slots;
  double placeability_drop = 0;  // the node's placeability before minus after
  int64_t memory = 0;            // MiB of the chosen profiles
  int32_t largest_gain = 0;      // change in the sum over GPUs of the largest placeable profile
  int gpus_used = 0;
};

// Exact joint placement of every instance of the pod over the node's MIG GPUs (those the pod's
// preferences admit). Without a goal: the first feasible plan (a pod that fits is never
// rejected). With a goal: the best plan by (least memory unless larger profiles are allowed,
// least placeability drop, largest placeable profiles kept, fewest GPUs, first in GPU order),
// searched exhaustively; GPUs with the same rules and the same layout are interchangeable, so
// only the first of them is tried for each instance. Beyond a search budget (pods with many
// instances on many GPUs) the best plan found so far is returned.
std::optional<MigPlan> PlanMigPlacement(const state::NodeState& node, const PodRequest& request,
                                        const PodPreferences& prefs, const MigGoal* goal);

// The same without a goal: used when the container-by-container pass fails.
std::optional<SlotAssignments> JointMigSearch(const state::NodeState& node,
                                              const PodRequest& request,
                                              const PodPreferences& prefs);

// Whether every GPU of the node the pod may use (by its nvidia.com/vgpu-mode) is in MIG mode:
// then the placement is MIG placement alone and the goal-driven plan replaces HAMi's pass.
bool OnlyMigDevicesAdmitted(const state::NodeState& node, const PodPreferences& prefs);

}  // namespace tessera::sched
