#pragma once

// What the agent needs from the Kubernetes API, as an interface: the agent's logic stays free
// of HTTP, and tests drive it with an in-memory fake. agent_runtime/ implements it over the
// libcurl client and a pod informer.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/model/pod.h"

namespace tessera::agent {

// A patch of annotations: a value sets the key, nullopt deletes it.
using AnnotationPatch = std::map<std::string, std::optional<std::string>>;

// The API's results use the project's one error vocabulary (core/common/result.h): a failure
// keeps the HTTP status as its origin code (0: no answer), and its code says what kind it is
// (kConflict for 409: the object changed, a compare-and-swap lost).
template <class T>
using ApiResult = Result<T>;

// The error of an API call answered with `http_status` (0: no answer).
inline Error ApiFailure(int http_status, std::string message) {
  ErrorCode code = ErrorCode::kUnavailable;  // no answer, 429, 5xx: may pass
  if (http_status == 409) {
    code = ErrorCode::kConflict;
  } else if (http_status == 404) {
    code = ErrorCode::kNotFound;
  } else if (http_status == 401 || http_status == 403) {
    code = ErrorCode::kPermissionDenied;
  } else if (http_status >= 400 && http_status < 500 && http_status != 429) {
    code = ErrorCode::kInvalidInput;
  }
  return Error{std::move(message), code, http_status == 0 ? "" : "HTTP", http_status};
}

// The pods bound to this node, with the time up to which the view provably holds every change.
struct PodView {
  std::vector<model::Pod> pods;
  // Milliseconds since the epoch (the agent's clock): the last relist, or the last watch event
  // or bookmark, that the view includes. A watch that silently stopped leaves it behind.
  int64_t fresh_ms = 0;
};

class NodeApi {
 public:
  virtual ~NodeApi() = default;
  // The pods bound to this node, from the agent's cache when it is synced; `fresh` lists them
  // from the API server.
  virtual ApiResult<std::vector<model::Pod>> PodsOnNode(bool fresh) = 0;
  // The same pods with their freshness, for decisions that destroy (the MIG reconcile): the
  // cache when synced, else a list from the API server.
  virtual ApiResult<PodView> PodViewOnNode() = 0;
  // One pod read straight from the API server (a quorum read, never a cache), to prove a pod
  // gone when the pod view is not fresh enough to: the pod, or nullopt when the API server
  // answers that no pod has this name. Any other outcome (no answer, another error, a 404 that
  // is not the API server's NotFound for this pod) is a failure and proves nothing.
  virtual ApiResult<std::optional<model::Pod>> ReadPod(const std::string& ns,
                                                       const std::string& name) = 0;
  virtual ApiResult<model::Node> GetNode() = 0;
  // Merge patch of a pod's annotations; with a resource version, a compare-and-swap.
  virtual ApiResult<model::Pod> PatchPod(const model::Pod& pod, const AnnotationPatch& patch,
                                         const std::string& resource_version) = 0;
  virtual ApiResult<model::Node> PatchNode(const AnnotationPatch& patch,
                                           const std::string& resource_version) = 0;
  // Sets a pod bound to this node Failed (its status: phase, reason, message, a
  // DisruptionTarget condition), with its uid as a precondition, so its controller replaces it.
  virtual ApiResult<model::Pod> FailPod(const model::Pod& pod, const std::string& reason,
                                        const std::string& message) = 0;
  // A Warning (or Normal) Event on the pod.
  virtual void PodEvent(const model::Pod& pod, const std::string& reason,
                        const std::string& message, bool warning) = 0;
  // A Warning (or Normal) Event on this node (a GPU registered differently than configured,
  // instances tessera did not create).
  virtual void NodeEvent(const std::string& reason, const std::string& message, bool warning) = 0;
};

}  // namespace tessera::agent
