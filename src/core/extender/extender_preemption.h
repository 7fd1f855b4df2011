#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/codec/json_util.h"
#include "core/common/result.h"

// The extender's preemption verb on the wire (k8s.io/kube-scheduler/extender/v1):
// ExtenderPreemptionArgs in, ExtenderPreemptionResult out. Keys are the Go field names, read
// case-insensitively, as the other extender types (extender_protocol.h).
namespace tessera::extender {

// MetaVictims: the pods to evict from one node, by uid, and how many PodDisruptionBudgets that
// breaks by kube-scheduler's count.
struct MetaVictims {
  std::vector<std::string> pod_uids;
  int64_t num_pdb_violations = 0;
};

// ExtenderPreemptionArgs: the pod to make room for, and kube-scheduler's own victims per
// candidate node. kube-scheduler sends NodeNameToMetaVictims (uids) to a nodeCacheCapable
// extender and NodeNameToVictims (whole pods) to others; both arrive here as uids (a node in both
// takes the MetaVictims). A null entry is a node without victims.
struct PreemptionArgs {
  codec::Json pod;
  std::map<std::string, MetaVictims> victims_by_node;
};

// Bounds on what a client may send: candidate nodes, and victims per node (each is a pod on
// that node, so a node's pod limit bounds the honest count).
struct PreemptionArgsLimits {
  size_t max_nodes = 5000;
  size_t max_victims_per_node = 1000;
};

// Errors name the field ("ExtenderPreemptionArgs.NodeNameToMetaVictims[n1].Pods[0].UID:
// expected a string").
Result<PreemptionArgs> DecodePreemptionArgs(std::string_view body,
                                            const PreemptionArgsLimits& limits = {});

// ExtenderPreemptionResult: the nodes kept, each with its victims; a node left out is dropped.
std::string EncodePreemptionResult(const std::map<std::string, MetaVictims>& victims_by_node);

}  // namespace tessera::extender
