#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/model/pod.h"
#include "core/sched/cycle_state.h"
#include "core/sched/decision.h"
#include "core/sched/filter_pass.h"
#include "core/sched/fit.h"
#include "core/sched/fragmentation.h"
#include "core/sched/mig_demand.h"
#include "core/sched/node_ranking.h"
#include "core/sched/preferences.h"
#include "core/sched/request.h"
#include "core/state/cluster_state.h"
#include "core/state/node_lookup.h"

namespace tessera::sched {

// One node's verdict on a pod (FilterEveryNode).
struct NodeVerdict {
  const state::NodeState* node = nullptr;
  bool fits = false;
  // Why, when it does not fit; resolvable() only when no node fits (evicting pods could make room
  // here).
  NodeStatus status;
};

// The scheduling cycle's phases for a pod over every node of `state`, choosing and reserving
// nothing: the pre-filter (parse, preferences, the namespace's quota), the filter with its
// equivalence cache, and the post-filter's reasons and preemption check. What explain shows, so
// a rule added to a phase shows there too. `decision`: kInvalidRequest or kPassthrough as the
// pre-filter settles it; else kScheduled when some node fits (no placement in it), or
// kUnschedulable with kube-scheduler's message.
struct CycleVerdicts {
  ParsedPod parsed;  // the request and preferences (the quota set) the filter used
  Decision decision;
  std::vector<NodeVerdict> nodes;  // in state.node_list()'s order; empty when settled
};
CycleVerdicts FilterEveryNode(const state::ClusterState& state, const model::Pod& pod,
                              const PolicyDefaults& defaults);

// The scheduling cycle: parse the request -> filter nodes and devices -> score -> reserve.
// Binding and annotation writes belong to the adapters; this class only decides and reserves.
class Scheduler {
 public:
  Scheduler(state::ClusterState& state, PolicyDefaults defaults)
      : state_(state),
        defaults_(std::move(defaults)),
        mix_(defaults_.demand_decay),
        mig_mix_(defaults_.demand_decay) {}

  // Parse, filter and score without changing anything. `candidates` limits the nodes (the
  // extender's NodeNames); nullptr means every node. `now_unix` stamps hami.io/vgpu-time.
  Decision Evaluate(const model::Pod& pod, const std::vector<std::string>* candidates,
                    int64_t now_unix) const;

  // The same over nodes already looked up in state() (no name lookups; for callers that keep
  // node pointers, such as the trace replay).
  Decision Evaluate(const model::Pod& pod, std::span<const state::NodeState* const> candidates,
                    int64_t now_unix) const;

  // Evaluate, then reserve the chosen devices. A pod that already held a reservation is
  // re-placed; if it no longer fits anywhere, its old reservation is kept, not lost.
  Decision Schedule(const model::Pod& pod, const std::vector<std::string>* candidates,
                    int64_t now_unix);
  Decision Schedule(const model::Pod& pod, std::span<const state::NodeState* const> candidates,
                    int64_t now_unix);

  // What Schedule would decide now, reserving nothing (/prioritize): a reservation the pod
  // already holds (its filter's) is set aside for the evaluation and put back, so it is not in
  // its own way. The demand mix is not observed again: the filter before it did.
  Decision Preview(const model::Pod& pod, const std::vector<std::string>* candidates,
                   int64_t now_unix);

  // Whether Preview would place the pod now. A refusal's reasons are not worked out (they are
  // most of a refusal's cost): the service asks this of every pod kept waiting whenever the
  // cluster changes.
  bool WouldPlace(const model::Pod& pod, const std::vector<std::string>* candidates);

  const state::ClusterState& state() const { return state_; }

  // Whether a pod that fits nowhere gets the reason of every node (Decision::failed_nodes and a
  // message counting them, as kube-scheduler shows them). On by default; finding a node's HAMi
  // reason takes its full fit, so callers that only need the placement (the trace replay) turn
  // it off. Placements are the same either way.
  void set_explain_failures(bool on) { explain_failures_ = on; }

  // Whether nodes in the same state share one evaluation (on by default). Decisions are the same
  // either way (tests/sim/decision_corpus_test.cc checks it); off, every node is evaluated, as
  // in a cluster whose nodes all differ: the benchmarks' worst case.
  void set_equivalence_cache(bool on) { equivalence_cache_ = on; }

  // Whether the filter skips nodes that its rank bound shows cannot be chosen (on by default;
  // sched::RankBound). Decisions are the same either way (tests/sim/decision_corpus_test.cc).
  void set_rank_bound(bool on) { rank_bound_ = on; }

  // The filter phase's nodes are split among `runner`'s threads (nullptr: the calling thread
  // alone), each given at least `min_nodes_per_thread` evaluations (handing out work costs about
  // as much as evaluating a few nodes). Decisions are the same for any number of threads. The
  // runner must outlive the scheduler's use of it.
  void set_filter_runner(TaskRunner* runner, size_t min_nodes_per_thread = 256) {
    filter_runner_ = runner;
    min_nodes_per_thread_ = std::max<size_t>(1, min_nodes_per_thread);
  }

  // The demand mix the fragmentation score uses. Schedule() observes every GPU pod it sees, once
  // per pod (retries of a pending pod are not new demand);
  // callers may add what the scheduler does not see (a prior, CPU-only pods in a replay).
  void ObserveDemand(const DemandShape& shape, double weight = 1.0) { mix_.Observe(shape, weight); }
  const DemandMix& demand_mix() const { return mix_; }
  // The MIG instances seen, for the placeability objective (Schedule observes every GPU pod not
  // pinned to a non-MIG mode).
  void ObserveMigDemand(const MigDemandKey& key, double weight = 1.0) {
    mig_mix_.Observe(key, weight);
  }
  const MigDemandMix& mig_demand_mix() const { return mig_mix_; }
  // What the MIG weights depend on here (MigFleetSignals): the churn, from the MIG pods this
  // scheduler placed and those held now, and how full each MIG model is and how much room it
  // keeps per profile (ClusterState::mig_fill). What each decision prices stranded slices and
  // room by, and so what the placeability readers (metrics) should too.
  MigFleetSignals FleetSignals() const;
  // A pod that is part of the demand but that this scheduler does not filter (a one-shot view of
  // a listed cluster): observed as Schedule observes a pod, once.
  void ObservePod(const model::Pod& pod);

 private:
  // `unregistered`: candidate names with no node (they fail with "node unregistered").
  Decision EvaluateOn(const model::Pod& pod, std::span<const state::NodeState* const> nodes,
                      std::span<const std::string* const> unregistered, int64_t now_unix,
                      bool explain) const;
  // The cycle's phases, in order: pre-filter (the parsed pod and its cycle state), filter and
  // score, then post-filter (the refusals, when `explain`) or reserve (the placement's record).
  Decision EvaluateParsed(const model::Pod& pod, ParsedPod parsed,
                          std::span<const state::NodeState* const> nodes,
                          std::span<const std::string* const> unregistered, int64_t now_unix,
                          bool explain) const;
  // How many threads the filter phase gets for `nodes` candidates.
  size_t FilterThreads(const CycleState& cycle, size_t nodes) const;
  void ReportRefusals(const CycleState& cycle, FilterOutcome* filtered, Decision* decision) const;
  // Schedule's first half (give up the pod's earlier reservation, observe its shape) and second
  // half (reserve the decision, or restore the earlier reservation).
  std::optional<state::PodReservation> BeginSchedule(const model::Pod& pod,
                                                     const ParsedPod& parsed);
  // Whether the pod's demand has not been observed yet (and remembers it).
  bool FirstSight(const model::Pod& pod);
  void ObserveParsed(const ParsedPod& parsed);
  Decision EndSchedule(Decision decision, std::optional<state::PodReservation> previous);

  state::ClusterState& state_;
  state::NodeLookup lookup_;  // Schedule's candidate names (filter after filter, the same list)
  PolicyDefaults defaults_;
  DemandMix mix_;
  MigDemandMix mig_mix_;
  int64_t mig_pods_placed_ = 0;  // MIG pods Schedule placed anew
  bool explain_failures_ = true;
  bool equivalence_cache_ = true;
  bool rank_bound_ = true;
  TaskRunner* filter_runner_ = nullptr;
  size_t min_nodes_per_thread_ = 256;
  // Pods whose demand was observed (uid, or key without one), oldest first, bounded: kube-
  // scheduler filters a pending pod again on every retry, and one pod is one request of the mix.
  std::set<std::string> observed_;
  std::deque<std::string> observed_order_;
};

}  // namespace tessera::sched
