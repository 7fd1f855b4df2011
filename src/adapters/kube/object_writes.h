#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "adapters/kube/client.h"
#include "adapters/kube/json_text.h"
#include "core/common/result.h"

// Typed writes to pods and nodes. Errors name the object and carry the server's reason
// ("patch pod ns/p: HTTP 409: ..."); pass `response` to see the raw answer, e.g. to tell a 409
// conflict (compare-and-swap lost, or pod already bound) from other failures.
namespace tessera::kube {

// JSON merge patch of a pod's metadata: {"metadata": metadata_patch}; null values delete keys.
// A non-empty resource_version is added as metadata.resourceVersion, which makes the patch a
// compare-and-swap (409 when the pod changed). Returns the updated pod.
Result<Json> MergePatchPodMetadata(Client& client, const std::string& ns, const std::string& name,
                                   const Json& metadata_patch,
                                   const std::string& resource_version = "",
                                   Response* response = nullptr);

// The same for a node.
Result<Json> MergePatchNodeMetadata(Client& client, const std::string& name,
                                    const Json& metadata_patch,
                                    const std::string& resource_version = "",
                                    Response* response = nullptr);

// Marks a running or pending pod Failed: a merge patch of its status subresource with phase
// Failed, `reason` and `message`, and a DisruptionTarget condition saying why, so its
// controller replaces it. metadata.uid makes it a precondition: a pod that took the name since
// is not touched (409). Returns the updated pod.
Result<Json> FailPod(Client& client, const std::string& ns, const std::string& name,
                     const std::string& uid, const std::string& reason, const std::string& message,
                     Response* response = nullptr);

// Sets a pending pod's status.nominatedNodeName (a merge patch of its status subresource, with
// metadata.uid as a precondition): tessera serve then holds room freed on that node for it.
Status NominatePod(Client& client, const std::string& ns, const std::string& name,
                   const std::string& uid, const std::string& node, Response* response = nullptr);

// Evicts a pod through the Eviction API (POST .../pods/<name>/eviction, policy/v1), so that its
// PodDisruptionBudgets are honoured (429 when one allows no disruption now); metadata.uid is a
// precondition. Without `grace_period_seconds` the pod's own grace period applies.
Status EvictPod(Client& client, const std::string& ns, const std::string& name,
                const std::string& uid, std::optional<int64_t> grace_period_seconds,
                Response* response = nullptr);

// Binds a pod to a node (POST .../pods/<name>/binding); 409 when it is already bound.
// `annotations` ride on the Binding: the API server sets them on the pod in the same write as its
// node, so the pod is never bound without them.
Status BindPod(Client& client, const std::string& ns, const std::string& name,
               const std::string& uid, const std::string& node,
               const std::map<std::string, std::string>& annotations = {},
               Response* response = nullptr);

// "/api/v1/namespaces/<ns>/pods/<name>" with the segments escaped.
std::string PodPath(const std::string& ns, const std::string& name);
std::string NodePath(const std::string& name);

}  // namespace tessera::kube
