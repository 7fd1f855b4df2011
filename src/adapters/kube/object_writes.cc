#include "adapters/kube/object_writes.h"

#include <utility>

#include "adapters/kube/url.h"

namespace tessera::kube {
namespace {

Json MetadataPatchBody(const Json& metadata_patch, const std::string& resource_version) {
  Json metadata = metadata_patch.is_object() ? metadata_patch : Json::object();
  if (!resource_version.empty()) metadata["resourceVersion"] = resource_version;
  return Json{{"metadata", std::move(metadata)}};
}

Result<Json> MergePatchMetadata(Client& client, const std::string& path, const std::string& what,
                                const Json& metadata_patch, const std::string& resource_version,
                                Response* response_out) {
  if (!metadata_patch.is_object()) return Error{"patch " + what + ": metadata patch not an object"};
  Response response =
      client.Patch(path, ToJsonText(MetadataPatchBody(metadata_patch, resource_version)),
                   "application/merge-patch+json");
  if (response_out != nullptr) *response_out = response;
  if (!response.ok()) return response.ToError("patch " + what);
  auto object = codec::ParseJson(response.body, "patch " + what + ": response");
  if (!object.ok()) return object.error();
  return std::move(*object);
}

}  // namespace

std::string PodPath(const std::string& ns, const std::string& name) {
  return "/api/v1/namespaces/" + EscapeUrlComponent(ns) + "/pods/" + EscapeUrlComponent(name);
}

std::string NodePath(const std::string& name) {
  return "/api/v1/nodes/" + EscapeUrlComponent(name);
}

Result<Json> MergePatchPodMetadata(Client& client, const std::string& ns, const std::string& name,
                                   const Json& metadata_patch, const std::string& resource_version,
                                   Response* response) {
  return MergePatchMetadata(client, PodPath(ns, name), "pod " + ns + "/" + name, metadata_patch,
                            resource_version, response);
}

Result<Json> MergePatchNodeMetadata(Client& client, const std::string& name,
                                    const Json& metadata_patch, const std::string& resource_version,
                                    Response* response) {
  return MergePatchMetadata(client, NodePath(name), "node " + name, metadata_patch,
                            resource_version, response);
}

Result<Json> FailPod(Client& client, const std::string& ns, const std::string& name,
                     const std::string& uid, const std::string& reason, const std::string& message,
                     Response* response_out) {
  const std::string what = "fail pod " + ns + "/" + name;
  if (uid.empty()) return Error{what + ": the pod's uid is required (a precondition)"};
  // A strategic merge patch merges conditions by type: the pod's own are kept.
  const Json patch = {{"metadata", {{"uid", uid}}},
                      {"status",
                       {{"phase", "Failed"},
                        {"reason", reason},
                        {"message", message},
                        {"conditions", Json::array({{{"type", "DisruptionTarget"},
                                                     {"status", "True"},
                                                     {"reason", reason},
                                                     {"message", message}}})}}}};
  Response response = client.Patch(PodPath(ns, name) + "/status", ToJsonText(patch),
                                   "application/strategic-merge-patch+json");
  if (response_out != nullptr) *response_out = response;
  if (!response.ok()) return response.ToError(what);
  auto object = codec::ParseJson(response.body, what + ": response");
  if (!object.ok()) return object.error();
  return std::move(*object);
}

Status NominatePod(Client& client, const std::string& ns, const std::string& name,
                   const std::string& uid, const std::string& node, Response* response_out) {
  const std::string what = "nominate pod " + ns + "/" + name + " to node " + node;
  if (uid.empty()) return Error{what + ": the pod's uid is required (a precondition)"};
  const Json patch = {{"metadata", {{"uid", uid}}}, {"status", {{"nominatedNodeName", node}}}};
  Response response = client.Patch(PodPath(ns, name) + "/status", ToJsonText(patch),
                                   "application/merge-patch+json");
  if (response_out != nullptr) *response_out = response;
  if (!response.ok()) return response.ToError(what);
  return Status::Ok();
}

Status EvictPod(Client& client, const std::string& ns, const std::string& name,
                const std::string& uid, std::optional<int64_t> grace_period_seconds,
                Response* response_out) {
  const std::string what = "evict pod " + ns + "/" + name;
  if (uid.empty()) return Error{what + ": the pod's uid is required (a precondition)"};
  Json delete_options = {{"preconditions", {{"uid", uid}}}};
  if (grace_period_seconds) delete_options["gracePeriodSeconds"] = *grace_period_seconds;
  const Json eviction = {{"apiVersion", "policy/v1"},
                         {"kind", "Eviction"},
                         {"metadata", {{"name", name}, {"namespace", ns}}},
                         {"deleteOptions", delete_options}};
  Response response = client.Post(PodPath(ns, name) + "/eviction", ToJsonText(eviction));
  if (response_out != nullptr) *response_out = response;
  if (!response.ok()) return response.ToError(what);
  return Status::Ok();
}

Status BindPod(Client& client, const std::string& ns, const std::string& name,
               const std::string& uid, const std::string& node,
               const std::map<std::string, std::string>& annotations, Response* response_out) {
  Json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  if (!annotations.empty()) binding["metadata"]["annotations"] = annotations;
  Response response = client.Post(PodPath(ns, name) + "/binding", ToJsonText(binding));
  if (response_out != nullptr) *response_out = response;
  if (!response.ok()) {
    return response.ToError("bind pod " + ns + "/" + name + " to node " + node);
  }
  return Status::Ok();
}

}  // namespace tessera::kube
