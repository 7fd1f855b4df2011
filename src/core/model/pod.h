#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace tessera::model {

// Quantities are kept as their original text; request derivation parses them so that an
// unusable value can be reported with the container and resource it came from.
using ResourceList = std::map<std::string, std::string>;

struct Container {
  std::string name;
  ResourceList limits;
  ResourceList requests;
  bool privileged = false;
  // env CUDA_DISABLE_CONTROL set to a true value (Go's strconv.ParseBool): HAMi-core is not
  // preloaded into this container (hami-node.md 8.2).
  bool cuda_disable_control = false;
};

struct ContainerStatus {
  std::string name;
  bool terminated = false;
  int exit_code = 0;
};

// The parts of a v1.Pod the scheduler reads.
struct Pod {
  std::string ns = "default";
  std::string name;
  std::string uid;
  std::string resource_version;
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> labels;
  std::string node_name;
  std::string scheduler_name;
  std::string phase;  // Pending, Running, Succeeded, Failed
  bool deleting = false;
  std::vector<Container> init_containers;
  std::vector<Container> containers;
  std::vector<ContainerStatus> init_container_statuses;
  // spec.priority (the PriorityClass's value, set by admission); 0 when absent, as
  // kube-scheduler counts a pod without one. Preemption evicts only pods below the preemptor's.
  int32_t priority = 0;
  // status.nominatedNodeName: where kube-scheduler's preemption made room for this pod, while
  // its victims terminate ("" when none).
  std::string nominated_node;
  // The kind of the owner reference marked controller ("ReplicaSet", "StatefulSet", "Job", ...;
  // "" when no controller owns the pod): whether something recreates the pod after an eviction.
  std::string controller_kind;
  // That owner's uid: a defragmentation move steers the pod that replaces an evicted one of the
  // same controller (annotation tessera.io/defrag-moving-to).
  std::string controller_uid;
  // metadata.creationTimestamp as the API server writes it (RFC 3339 in UTC, so the text sorts
  // as the time does); "" when absent. The defragmentation planner admits the oldest first.
  std::string created;

  std::string Key() const { return ns + "/" + name; }
  const std::string* Annotation(const std::string& key) const {
    auto it = annotations.find(key);
    return it == annotations.end() ? nullptr : &it->second;
  }
  bool IsTerminal() const { return phase == "Succeeded" || phase == "Failed"; }
};

// The parts of a v1.Node the scheduler reads.
struct Node {
  std::string name;
  std::string resource_version;
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> allocatable;
  const std::string* Annotation(const std::string& key) const {
    auto it = annotations.find(key);
    return it == annotations.end() ? nullptr : &it->second;
  }
};

// The pod's host CPU request in millicores, as kube-scheduler counts it: the larger of the sum of
// the app containers' requests and the largest init container's (limits when requests are
// absent). Unparseable values count 0: kube-scheduler rejects such pods before tessera sees them.
int64_t PodCpuRequestMilli(const Pod& pod);
// A node's allocatable CPU in millicores, when the Node object says.
std::optional<int64_t> NodeCpuAllocatableMilli(const Node& node);

// "NAMESPACE/NAME" as Kubernetes allows them (a DNS-1123 label, a DNS-1123 subdomain); the
// error says what is wrong with the text.
Status ValidatePodKey(std::string_view key);

}  // namespace tessera::model
