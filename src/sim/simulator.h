#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/mig/catalog.h"
#include "core/sched/scheduler.h"
#include "core/state/cluster_state.h"
#include "core/state/reservation_cache.h"
#include "sim/scenario.h"

namespace tessera::sim {

// One device a deleted pod gave back.
struct ReleasedDevice {
  std::string node;
  std::string uuid;
  int32_t mem = 0;
  int32_t cores = 0;
  std::string mig_profile;
  model::Placement placement;
};

// What happened at one step (a create, a delete, or a retry of a pending pod after a delete).
struct StepResult {
  int step = 0;
  std::string action;         // "create", "delete", "retry", "node"
  std::string pod;            // namespace/name
  std::string node;           // "node": the node updated
  std::string node_unusable;  // "node": why it takes no pods now (empty when it does)
  bool adopted = false;
  std::string error;  // a create that could not be admitted or adopted
  // An adopted pod whose annotations do not all decode: the GPUs they name are held whole.
  std::string warning;
  sched::Decision decision;
  std::vector<ReleasedDevice> released;
  bool found = true;  // delete: the pod existed
};

// Runs a scenario through the production scheduling code: the same admission defaults, the same
// cycle, the same state updates as `tessera serve`. Pods that do not fit stay pending and are
// retried, in creation order, after every delete (as kube-scheduler requeues on cluster events).
class Simulator {
 public:
  explicit Simulator(Scenario scenario);

  std::vector<StepResult> RunStep(size_t index);
  std::vector<StepResult> RunAll();

  const state::ClusterState& state() const { return state_; }
  // The scheduler, for its switches (set_equivalence_cache) before the run.
  sched::Scheduler& scheduler() { return scheduler_; }
  const Scenario& scenario() const { return scenario_; }
  // Pods that fit nowhere yet, oldest first, as admitted (with the webhook's defaults).
  const std::vector<model::Pod>& pending() const { return pending_; }
  size_t step_count() const { return scenario_.steps.size(); }
  // The pods holding devices now, in the order they got them, as an informer would list them:
  // bound to their node, with the placement annotations their decision wrote (an adopted pod as
  // it came).
  std::vector<model::Pod> running() const;
  // The nodes as the steps left them: the scenario's, each replaced by its last node step, and
  // the nodes the steps added after them.
  const std::vector<model::Node>& nodes() const { return nodes_; }

 private:
  StepResult Create(int step, const model::Pod& pod, const std::string& action);
  // The decision an adopted (running) pod stands for: its placement as its annotations say.
  static sched::Decision AdoptedDecision(const model::Pod& pod,
                                         const state::PodReservation& reservation);
  // Adds or replaces a node. A node whose allocatable GPU count is 0 has no live device plugin
  // (the file is a snapshot: the grace period is taken as over); without the key it is live.
  void ApplyNode(const model::Node& node);
  // After a create: the pod is running when it holds devices now.
  void RecordRunning(const model::Pod& pod);
  // After a cluster change: pending pods get another chance, oldest first.
  void RetryPending(int step, std::vector<StepResult>* out);
  int64_t Now(int step) const { return kEpoch + step; }
  static constexpr int64_t kEpoch = 1767225600;  // 2026-01-01T00:00:00Z: deterministic output
  // One step is one second on the reservation cache's clock. Nothing expires in a simulation (a
  // scheduled pod is bound at once), so the timeout only has to be positive.
  static state::ReservationCache::TimePoint Clock(int step) {
    return state::ReservationCache::TimePoint{} + std::chrono::seconds(step);
  }
  static constexpr std::chrono::milliseconds kReservationTimeout{60000};

  Scenario scenario_;
  state::ClusterState state_;
  sched::Scheduler scheduler_;
  state::ReservationCache reservations_;  // adoption of running pods, releases on delete
  std::vector<model::Pod> pending_;
  std::vector<model::Node> nodes_;
  struct Running {
    uint64_t since = 0;  // when it got its devices, in creates
    model::Pod pod;
  };
  std::map<std::string, Running> running_;
  uint64_t creates_ = 0;
};

// The scenario's final state as a scenario without history: its config and policy, its nodes as
// the steps left them, its quotas, and one create per pod: those holding devices as running pods
// (Simulator::running()), then those still pending, oldest first, as admitted (with the
// placement a pending pod came with and still holds). Simulating it gives the same final state;
// `tessera serve --cluster` serves it.
Scenario FinalStateScenario(Scenario scenario);

}  // namespace tessera::sim
