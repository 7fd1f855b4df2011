#pragma once

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/codec/json_util.h"
#include "core/common/result.h"

// The kube-scheduler extender wire types (k8s.io/kube-scheduler/extender/v1). The Go structs have
// no json tags, so the keys are the Go field names; Go decodes them case-insensitively and
// encodes nil slices, maps and pointers as null. We read the same way and write the exact names.
namespace tessera::extender {

// ExtenderArgs: the pod and the candidate nodes (names when nodeCacheCapable, else objects).
struct ExtenderArgs {
  codec::Json pod;
  std::optional<std::vector<std::string>> node_names;
  std::optional<std::vector<codec::Json>> nodes;  // NodeList.items
};

// ExtenderFilterResult.
struct FilterResult {
  std::optional<std::vector<std::string>> node_names;
  std::optional<std::vector<codec::Json>> nodes;
  std::map<std::string, std::string> failed_nodes;
  std::map<std::string, std::string> failed_and_unresolvable;
  std::string error;
};

// ExtenderBindingArgs.
struct BindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
  std::string PodKey() const { return pod_namespace + "/" + pod_name; }
};

// One HostPriority of a HostPriorityList; scores run from 0 to kMaxPriority.
struct HostPriority {
  std::string host;
  int64_t score = 0;
};
inline constexpr int64_t kMaxPriority = 10;

// Errors name the field ("ExtenderArgs.NodeNames[2]: expected a string"). More than `max_nodes`
// node names or node objects is an error (TooManyNodes), found before the objects are copied.
Result<ExtenderArgs> DecodeExtenderArgs(std::string_view body,
                                        size_t max_nodes = std::numeric_limits<size_t>::max());
// The error for a candidate list longer than `max_nodes`; `field` is "NodeNames" or "Nodes.items".
Error TooManyNodes(std::string_view field, size_t max_nodes);
Result<BindingArgs> DecodeBindingArgs(std::string_view body);

std::string EncodeFilterResult(const FilterResult& result);
std::string EncodeBindingResult(const std::string& error);
std::string EncodeHostPriorityList(const std::vector<HostPriority>& priorities);

// The names the candidate set holds, whichever form it came in.
std::vector<std::string> CandidateNames(const ExtenderArgs& args);

}  // namespace tessera::extender
