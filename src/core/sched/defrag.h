#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/device.h"
#include "core/model/disruption_budget.h"
#include "core/model/job_retries.h"
#include "core/model/pod.h"
#include "core/sched/decision.h"
#include "core/sched/defrag_measure.h"
#include "core/sched/preferences.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// The defragmentation planner (docs/defrag.md): which running pods to evict, and where each would
// be placed again, so that (a) pending pods are admitted, highest priority and oldest first, or
// (b) with none pending, the cluster's MIG placeability rises or its sharing fragmentation falls
// for the observed demand mix. A dry run on a copy of the state: nothing is evicted.

// A pod labelled so (any value) is never moved.
inline constexpr std::string_view kNoDefragLabel = "tessera.io/no-defrag";

struct DefragLimits {
  int max_evictions = 4;  // per plan
  // Mode (b): what one eviction must gain, in either measure's own unit: MIG placeability in GiB
  // (the memory the demand mix could still take) or sharing fragmentation in GPUs.
  double min_gain = 1.0;
  double min_fragmentation_drop = 0.1;
  // Single-node fits and re-placements (each one scheduling cycle on the copy), per plan.
  int max_evaluations = 4000;
  // Mode (b) when no pending pod is admitted; off, a plan only ever admits pending pods.
  bool raise_placeability = true;
};

// A device an evicted pod held, as its reservation says.
struct FreedDevice {
  std::string uuid;
  int32_t mem = 0;  // MiB
  int32_t cores = 0;
  std::string mig_profile;  // empty when not MIG
  model::Placement placement;
};

// One eviction of the plan.
struct DefragStep {
  std::string pod;  // namespace/name
  std::string node;
  std::vector<FreedDevice> frees;
  int64_t freed_mem = 0;  // MiB
  // Where the scheduler would place it again, and on which devices.
  std::string replaced_node;
  std::vector<GrantedDevice> replaced_on;
  // What it would hold there, as the scheduler reserved it on the plan's copy: what a caller
  // that carries the plan out (the MIG replay) commits.
  state::PodReservation replaced_reservation;
  // What it gains: the pending pod it makes room for (with the other steps naming it), or, in
  // mode (b), the change of each measure.
  std::string admits;
  double placeability_gain = 0;   // GiB
  double fragmentation_drop = 0;  // GPUs
};

struct AdmittedPod {
  std::string pod;
  std::string node;
  std::vector<GrantedDevice> devices;
  std::vector<std::string> evicted;   // the steps that make room for it, none when it fits now
  state::PodReservation reservation;  // as the scheduler reserved it on the plan's copy
};

struct DefragPlan {
  enum class Mode {
    kNothing,           // no step
    kAdmitPending,      // (a)
    kRaisePlaceability  // (b)
  };
  Mode mode = Mode::kNothing;
  std::vector<DefragStep> steps;
  ClusterMeasures before;
  ClusterMeasures after;
  std::vector<AdmittedPod> admitted;
  // Pending pods the plan does not admit, and why.
  std::map<std::string, std::string> not_admitted;
  // Pods holding GPUs that may not move, and why (no controller, the label, a budget, no spec).
  std::map<std::string, std::string> unmovable;
  std::string why_empty;  // when there is no step
  DefragLimits limits;    // the plan's
  int evaluations = 0;
  bool search_complete = true;  // false: the evaluation budget ran out
};

// Whether a pod whose controlling owner is of this kind comes back after an eviction (a
// ReplicaSet, StatefulSet or Job recreates it; a DaemonSet's pod is bound to its node).
bool RecreatedByController(std::string_view kind);

// What the planner keeps of a running pod to place it again: the pod without what placing wrote
// (HAMi's placement and bind annotations, tessera's requeue mark), kubectl's last-applied copy,
// its status details and resource version, none of which scheduling reads; a view that keeps
// every movable pod's spec (the scheduler's, for /defrag) keeps it small.
model::Pod SpecToPlaceAgain(const model::Pod& pod);

// Why the pod holding `reservation` may not move ("" when it may, budgets aside): no controller
// that recreates it, the no-defrag label, or no spec to place it again with.
std::string WhyNotMovable(const state::PodReservation& reservation, const model::Pod* spec);

// The plan for `state` (copied, never changed). `pending`: pods that fit nowhere, oldest first;
// `running`: the specs of the pods holding reservations (a pod is placed again from its spec, so
// one without is not moved); `budgets`: the PodDisruptionBudgets, counted over the plan's
// evictions together; `jobs`: the Jobs whose pods may move, each as many times as its retries
// allow (JobRetries::EvictionsAllowed; a Job's pod whose Job is not given never moves);
// `observed`: the demand mode (b) measures for, when a scheduler has
// observed one (else that of `running` and `pending`). Same input, same plan.
DefragPlan PlanDefrag(const state::ClusterState& state, std::span<const model::Pod> pending,
                      std::span<const model::Pod> running, const PolicyDefaults& defaults,
                      std::span<const model::DisruptionBudget> budgets,
                      std::span<const model::JobRetries> jobs, const DefragLimits& limits = {},
                      ObservedDemand observed = {});

}  // namespace tessera::sched
