#include "sim/simulator.h"

#include <algorithm>
#include <set>

#include "core/sched/admission.h"
#include "core/state/node_liveness.h"

namespace tessera::sim {

Simulator::Simulator(Scenario scenario)
    : scenario_(std::move(scenario)),
      state_(scenario_.config),
      scheduler_(state_, scenario_.policy),
      reservations_(state_, kReservationTimeout) {
  for (const auto& node : scenario_.nodes) ApplyNode(node);
  for (const auto& quota : scenario_.quotas) state_.UpsertQuota(quota);  // checked when parsed
}

void Simulator::ApplyNode(const model::Node& node) {
  const std::string& count = state_.config().nvidia.resource_count_name;
  std::string reason;
  if (node.allocatable.count(count) > 0) {
    // Observed at 0 an hour ago, judged now: not live exactly when the count is 0.
    state::NodeLiveness liveness(count, std::chrono::seconds(1));
    const state::NodeLiveness::Clock::time_point t0{};
    liveness.Observe(node, t0);
    reason = liveness.Verdict(node.name, t0 + std::chrono::hours(1));
  }
  state_.SetNodeBlocked(node.name, reason);
  state_.UpsertNode(node);
  auto known = std::find_if(nodes_.begin(), nodes_.end(),
                            [&](const model::Node& n) { return n.name == node.name; });
  if (known != nodes_.end()) {
    *known = node;
  } else {
    nodes_.push_back(node);
  }
}

void Simulator::RecordRunning(const model::Pod& pod) {
  if (state_.pod(pod.Key()) == nullptr) {
    running_.erase(pod.Key());
  } else {
    running_[pod.Key()] = Running{creates_, pod};
  }
}

std::vector<model::Pod> Simulator::running() const {
  std::vector<const Running*> order;
  order.reserve(running_.size());
  for (const auto& [key, r] : running_) order.push_back(&r);
  std::sort(order.begin(), order.end(),
            [](const Running* a, const Running* b) { return a->since < b->since; });
  std::vector<model::Pod> pods;
  pods.reserve(order.size());
  for (const Running* r : order) pods.push_back(r->pod);
  return pods;
}

void Simulator::RetryPending(int step, std::vector<StepResult>* out) {
  std::vector<model::Pod> waiting;
  waiting.swap(pending_);
  for (const auto& pod : waiting) out->push_back(Create(step, pod, "retry"));
}

sched::Decision Simulator::AdoptedDecision(const model::Pod& pod,
                                           const state::PodReservation& reservation) {
  sched::Decision d;
  d.outcome = sched::Outcome::kScheduled;
  d.node = reservation.node;
  d.annotations = pod.annotations;
  for (const auto& c : pod.init_containers) d.container_names.push_back(c.name);
  for (const auto& c : pod.containers) d.container_names.push_back(c.name);
  d.containers.resize(d.container_names.size());
  for (size_t slot = 0; slot < reservation.devices.size() && slot < d.containers.size(); ++slot) {
    for (size_t pos = 0; pos < reservation.devices[slot].size(); ++pos) {
      const auto& device = reservation.devices[slot][pos];
      sched::GrantedDevice g{device.uuid, device.used_mem, device.used_cores, "", {}};
      for (const auto& m : reservation.mig) {
        if (m.container_index == static_cast<int>(slot) &&
            m.device_index == static_cast<int>(pos)) {
          g.mig_profile = m.profile;
          g.placement = m.placement;
        }
      }
      d.containers[slot].push_back(g);
    }
  }
  return d;
}

StepResult Simulator::Create(int step, const model::Pod& pod, const std::string& action) {
  ++creates_;
  StepResult r;
  r.step = step;
  r.action = action;
  r.pod = pod.Key();
  // The pod as an informer would show it, adopted by the service's rules: a pod bound to a node
  // with a placement is running and is not scheduled again.
  using Adoption = state::ReservationCache::Adoption;
  const state::ReservationCache::Observed seen = reservations_.Observe(pod, Clock(step));
  if (seen.adoption == Adoption::kUnreadable) {
    r.error = seen.error;
    RecordRunning(pod);
    return r;
  }
  if (seen.adoption == Adoption::kGone) {
    r.error = "pod " + pod.Key() + " has finished (phase " + pod.phase + "): nothing to schedule";
    RecordRunning(pod);
    return r;
  }
  if (seen.adoption == Adoption::kBound) {
    r.adopted = true;
    r.warning = seen.problem;
    r.decision = AdoptedDecision(pod, *state_.pod(pod.Key()));
    RecordRunning(pod);
    return r;
  }
  auto admitted = sched::ApplyAdmissionDefaults(pod, state_.config().nvidia);
  if (!admitted.ok()) {
    r.error = "admission denied: pod " + pod.Key() + ": " + admitted.error().message;
    RecordRunning(pod);
    return r;
  }
  r.decision = scheduler_.Schedule(admitted->pod, nullptr, Now(step));
  model::Pod placed = admitted->pod;
  if (r.decision.outcome == sched::Outcome::kScheduled) {
    reservations_.Confirm(pod.Key());  // bound at once: the simulator has no bind phase
    placed.node_name = r.decision.node;
    for (const auto& [key, value] : r.decision.annotations) placed.annotations[key] = value;
  } else if (r.decision.outcome == sched::Outcome::kUnschedulable) {
    pending_.push_back(admitted->pod);
  }
  RecordRunning(placed);
  return r;
}

std::vector<StepResult> Simulator::RunStep(size_t index) {
  std::vector<StepResult> out;
  const ScenarioStep& st = scenario_.steps[index];
  const int step = static_cast<int>(index) + 1;
  if (st.kind == ScenarioStep::Kind::kCreate) {
    out.push_back(Create(step, st.pod, "create"));
    return out;
  }
  if (st.kind == ScenarioStep::Kind::kNode) {
    ApplyNode(st.node);
    StepResult r;
    r.step = step;
    r.action = "node";
    r.node = st.node.name;
    if (const state::NodeState* ns = state_.node(st.node.name))
      r.node_unusable = ns->unusable_reason;
    out.push_back(std::move(r));
    RetryPending(step, &out);  // kube-scheduler requeues pending pods on node events
    return out;
  }
  StepResult r;
  r.step = step;
  r.action = "delete";
  r.pod = st.pod_key;
  auto it = std::find_if(pending_.begin(), pending_.end(),
                         [&](const model::Pod& p) { return p.Key() == st.pod_key; });
  if (it != pending_.end()) pending_.erase(it);
  auto released = reservations_.Forget(st.pod_key);
  running_.erase(st.pod_key);
  r.found = released.has_value();
  if (released) {
    for (size_t slot = 0; slot < released->devices.size(); ++slot) {
      for (size_t pos = 0; pos < released->devices[slot].size(); ++pos) {
        const auto& d = released->devices[slot][pos];
        ReleasedDevice rd{released->node, d.uuid, d.used_mem, d.used_cores, "", {}};
        for (const auto& m : released->mig) {
          if (m.container_index == static_cast<int>(slot) &&
              m.device_index == static_cast<int>(pos)) {
            rd.mig_profile = m.profile;
            rd.placement = m.placement;
          }
        }
        r.released.push_back(rd);
      }
    }
  }
  out.push_back(std::move(r));
  RetryPending(step, &out);  // the cluster changed
  return out;
}

std::vector<StepResult> Simulator::RunAll() {
  std::vector<StepResult> all;
  for (size_t i = 0; i < scenario_.steps.size(); ++i) {
    for (auto& r : RunStep(i)) all.push_back(std::move(r));
  }
  return all;
}

Scenario FinalStateScenario(Scenario scenario) {
  Simulator sim(std::move(scenario));
  sim.RunAll();
  Scenario final_state;
  final_state.config = sim.scenario().config;
  final_state.policy = sim.scenario().policy;
  final_state.quotas = sim.scenario().quotas;
  final_state.budgets = sim.scenario().budgets;
  final_state.nodes = sim.nodes();
  auto create = [&](const model::Pod& pod) {
    ScenarioStep step;
    step.kind = ScenarioStep::Kind::kCreate;
    step.pod = pod;
    final_state.steps.push_back(std::move(step));
  };
  std::set<std::string> pending;
  for (const model::Pod& pod : sim.pending()) pending.insert(pod.Key());
  // A pending pod can hold a placement it came with (unbound, as after a restart): it is
  // created once, pending, with that placement.
  for (const model::Pod& pod : sim.running()) {
    if (pending.count(pod.Key()) == 0) create(pod);
  }
  for (const model::Pod& pod : sim.pending()) create(pod);
  return final_state;
}

}  // namespace tessera::sim
