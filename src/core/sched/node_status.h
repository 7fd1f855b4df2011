#pragma once

#include <map>
#include <string>
#include <string_view>

#include "core/sched/reasons.h"

namespace tessera::sched {

// Why one node refused a pod, as the cycle found it: typed from the filter to the edge, and made
// text only where HTTP answers, Events, metrics and explain show it (FormatNodeStatus).
struct NodeStatus {
  enum class Code : uint8_t {
    // Refused; evicting pods there could make room (kube-scheduler may preempt there).
    kUnschedulable,
    // Refused, and evicting every pod there would not make room either (wrong GPU model or
    // UUID, unhealthy or cordoned GPUs, too few GPUs): kube-scheduler's
    // UnschedulableAndUnresolvable, the extender's FailedAndUnresolvableNodes.
    kUnresolvable,
    // The node takes no pod at all (unregistered, its registration unreadable): `detail` says why.
    kUnusable,
    // Refused by the demand-aware MIG plan, which is exact but does not say why: the reasons are
    // worked out only if no node fits (NodeEvaluator::RefusalReason).
    kNotWorkedOut,
  };
  Code code = Code::kUnschedulable;
  // HAMi's reasons over `devices` GPUs. `devices` 0: reasons of the node as a whole, shown
  // without a count (HAMi's bare "NodeInsufficientDevice").
  ReasonCounts counts;
  int32_t devices = 0;
  std::string detail;  // kUnusable only

  // A refusal for reasons of the node as a whole.
  static NodeStatus OfNode(Reason r);
  static NodeStatus Unusable(std::string why);

  bool resolvable() const { return code == Code::kUnschedulable; }
  // The same refusal, whether or not preemption could help: what the text shows.
  bool SameReasons(const NodeStatus& other) const {
    return devices == other.devices && counts == other.counts && detail == other.detail;
  }
};

// A strict order on what a status shows (its code aside): statuses equal in it read the same.
struct ReasonOrder {
  bool operator()(const NodeStatus& a, const NodeStatus& b) const;
};

// The status as kube-scheduler shows it: HAMi's GenReason ("<count>/<total> <Reason>" pieces,
// byte-wise sorted, joined with ", "), the bare names of node-wide reasons, or the detail of an
// unusable node.
std::string FormatNodeStatus(const NodeStatus& status);

// The reason words a status counts, each once: HAMi's names, "NodeUnusable" for a node that takes
// no pod (a bounded set: the words label metrics and group Events).
template <typename Visit>
void ForEachReasonWord(const NodeStatus& status, Visit&& visit) {
  if (status.code == NodeStatus::Code::kUnusable) {
    visit(std::string_view("NodeUnusable"));
    return;
  }
  status.counts.ForEach([&](Reason r, int32_t) { visit(ReasonName(r)); });
}

// kube-scheduler's FitError message: "0/<N> nodes are available: <count> <reason>, ...." with the
// "<count> <reason>" pieces sorted. Each distinct status is formatted once.
std::string FormatPodMessage(const std::map<std::string, NodeStatus>& failed_nodes,
                             int total_nodes);

// The text of each node's status, each distinct status formatted once (thousands of nodes
// usually share a handful).
std::map<std::string, std::string> FormatNodeStatuses(
    const std::map<std::string, NodeStatus>& failed_nodes);

}  // namespace tessera::sched
