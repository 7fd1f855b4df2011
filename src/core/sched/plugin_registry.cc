#include "core/sched/plugin_registry.h"

#include <array>

#include "core/sched/node_policy.h"

namespace tessera::sched {
namespace {

constexpr std::array kPlugins = {
    PluginEntry{"parse-request", Phase::kPreFilter, false, "sched/cycle_state.cc ParsePod",
                "the pod's resources as one request per allocation slot, init containers first"},
    PluginEntry{"parse-preferences", Phase::kPreFilter, false,
                "sched/preferences.cc ParsePreferences",
                "annotations: type and UUID filters, vgpu-mode, NUMA, node and GPU policy, "
                "scoring weights"},
    PluginEntry{"quota", Phase::kPreFilter, false, "state/quota_book.cc QuotaBook",
                "what the pod's namespace may still use under its GPU quotas"},
    PluginEntry{"cycle-state", Phase::kPreFilter, false, "sched/cycle_state.cc CycleState",
                "what every node's evaluation shares: demand target, MIG goal, rank bounds"},
    PluginEntry{"usable-nodes", Phase::kFilter, false, "state/cluster_state.cc ClusterState",
                "nodes that are live and selected; the candidates kube-scheduler sent"},
    PluginEntry{"equivalence-cache", Phase::kFilter, false, "sched/filter_pass.cc FilterPass",
                "one evaluation per node state class"},
    PluginEntry{"rank-bound", Phase::kFilter, false,
                "sched/rank_bound.cc RankBound, sched/mig_rank_bound.cc MigRankBound",
                "skips a node whose summaries show it cannot rank first (fragmentation alone)"},
    PluginEntry{"may-fit", Phase::kFilter, false, "sched/node_evaluator.cc MayFit",
                "a cheap necessary check from the node's summaries"},
    PluginEntry{"hami-fit", Phase::kFilter, false, "sched/fit.cc FitPodOnNode",
                "HAMi's per-GPU checks in HAMi's order (health, type, UUID, mode, slots, "
                "memory, cores, NUMA, mutex), counting HAMi's reasons"},
    PluginEntry{"topology-aware", Phase::kFilter, false, "sched/topology.cc",
                "HAMi's topology-aware GPU sets for multi-GPU containers"},
    PluginEntry{"mig-arrange", Phase::kFilter, false, "mig/layout.cc GpuMigModel::Arrange",
                "an exact arrangement of a pod's MIG instances on one GPU"},
    PluginEntry{"mig-plan", Phase::kFilter, false, "sched/mig_placement.cc PlanMigPlacement",
                "GPUs, profiles and placements chosen jointly for the most placeability left"},
    PluginEntry{"fragmentation", Phase::kScore, true, "sched/node_ranking.cc RankNode",
                "minus the fragmentation the pod adds (MIG: placeability drop), in steps"},
    PluginEntry{"hami-node-score", Phase::kScore, true, "sched/node_ranking.cc RankNode",
                "HAMi's node score before the pod"},
    PluginEntry{"fullness", Phase::kScore, true, "sched/node_ranking.cc RankNode",
                "HAMi's node score after the pod"},
    PluginEntry{"node-ties", Phase::kScore, false, "sched/node_ranking.h RanksBefore",
                "equal sums: with fragmentation, in use before idle and a fixed node order "
                "(MIG plans: fullest); then the first by name"},
    PluginEntry{"fragmentation-gpu", Phase::kScore, false, "sched/node_scoring.cc SingleGpuRanks",
                "GPU policy tessera: a one-GPU shared pod takes the GPU adding least "
                "fragmentation"},
    PluginEntry{"hami-device-order", Phase::kScore, false, "sched/device_order.cc OrderDevices",
                "HAMi's GPU order: binpack, spread, numa, mutex, device-scoring-weights"},
    PluginEntry{"reasons", Phase::kPostFilter, false, "sched/scheduler.cc ReportRefusals",
                "when nothing fits: each node's HAMi reason"},
    PluginEntry{"preemption-check", Phase::kPostFilter, false,
                "sched/node_evaluator.cc PreemptionCheck",
                "whether evicting pods could help (FailedAndUnresolvableNodes)"},
    PluginEntry{"record-placement", Phase::kReserve, false,
                "sched/placement_record.cc RecordPlacement",
                "granted devices, HAMi's annotations and the reservation"},
    PluginEntry{"reservation-cache", Phase::kBind, false,
                "state/reservation_cache.cc ReservationCache",
                "assume, bind, confirm or undo, expire; adoption of running pods"},
};

}  // namespace

std::string_view ToString(Phase phase) {
  switch (phase) {
    case Phase::kPreFilter:
      return "pre-filter";
    case Phase::kFilter:
      return "filter";
    case Phase::kScore:
      return "score";
    case Phase::kPostFilter:
      return "post-filter";
    case Phase::kReserve:
      return "reserve";
    case Phase::kBind:
      return "bind";
  }
  return "?";
}

std::span<const PluginEntry> Plugins() { return kPlugins; }

std::string PluginTableText() {
  std::string out;
  bool first = true;
  Phase phase = Phase::kPreFilter;
  for (const PluginEntry& p : kPlugins) {
    if (first || p.phase != phase) {
      out += std::string(first ? "" : "\n") + std::string(ToString(p.phase)) + ":\n";
      phase = p.phase;
      first = false;
    }
    out += "  " + std::string(p.name) + (p.in_node_policy ? " (node policy plugin)" : "") + ": " +
           std::string(p.does) + "\n    " + std::string(p.code) + "\n";
  }
  out += "\nbuilt-in node policies (--define-node-policy NAME=PLUGIN:WEIGHT,... adds more):\n";
  for (const NodePolicy& policy :
       {NodePolicy::Tessera(), NodePolicy::Binpack(), NodePolicy::Spread()}) {
    out += "  " + policy.Definition() + "\n";
  }
  return out;
}

}  // namespace tessera::sched
