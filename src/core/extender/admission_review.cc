#include "core/extender/admission_review.h"

#include <string>

#include "core/codec/k8s_objects.h"
#include "core/common/strings.h"
#include "core/sched/admission.h"
#include "core/sched/near_miss.h"
#include "core/sched/preferences.h"
#include "core/sched/request.h"

namespace tessera::extender {

using codec::FindKey;
using codec::Json;

namespace {

constexpr std::string_view kV1 = "admission.k8s.io/v1";

// RFC 6901: "~" and "/" inside a key.
std::string EscapePointer(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

// Adds `resource: value` to a container's limits, creating resources/limits when absent.
void AddLimit(const Json& pod, bool init, size_t index, const std::string& resource,
              const std::string& value, Json* patch) {
  const std::string list = init ? "initContainers" : "containers";
  const std::string base = "/spec/" + list + "/" + std::to_string(index);
  const Json* spec = FindKey(pod, "spec");
  const Json* containers = spec != nullptr ? FindKey(*spec, list) : nullptr;
  const Json* container =
      containers != nullptr && containers->is_array() && index < containers->size()
          ? &(*containers)[index]
          : nullptr;
  const Json* resources = container != nullptr ? FindKey(*container, "resources") : nullptr;
  const Json* limits =
      resources != nullptr && resources->is_object() ? FindKey(*resources, "limits") : nullptr;
  // Earlier operations of this same patch may already have created the maps.
  bool created_resources = false;
  bool created_limits = false;
  for (const auto& op : *patch) {
    if (op["path"] == base + "/resources") created_resources = true;
    if (op["path"] == base + "/resources/limits") created_limits = true;
  }
  if ((resources == nullptr || !resources->is_object()) && !created_resources) {
    patch->push_back({{"op", "add"}, {"path", base + "/resources"}, {"value", Json::object()}});
    created_resources = true;
  }
  if ((limits == nullptr || !limits->is_object()) && !created_limits) {
    patch->push_back(
        {{"op", "add"}, {"path", base + "/resources/limits"}, {"value", Json::object()}});
  }
  patch->push_back({{"op", "add"},
                    {"path", base + "/resources/limits/" + EscapePointer(resource)},
                    {"value", value}});
}

AdmissionVerdict Deny(std::string message, int32_t code = 403) {
  AdmissionVerdict v;
  v.allowed = false;
  v.message = std::move(message);
  v.code = code;
  return v;
}

}  // namespace

Result<AdmissionRequest> DecodeAdmissionReview(std::string_view body) {
  auto root = codec::ParseJson(body, "AdmissionReview");
  if (!root.ok()) return root.error();
  if (!root->is_object()) return Error{"AdmissionReview: expected a JSON object"};
  AdmissionRequest req;
  Status s = codec::ReadString(*root, "apiVersion", "AdmissionReview", &req.api_version);
  if (!s.ok()) return Error{s.message()};
  if (req.api_version.empty()) req.api_version = std::string(kV1);
  if (req.api_version != kV1 && req.api_version != "admission.k8s.io/v1beta1") {
    return Error{"AdmissionReview.apiVersion: unsupported \"" + req.api_version +
                 "\" (want admission.k8s.io/v1 or v1beta1)"};
  }
  const Json* request = FindKey(*root, "request");
  if (request == nullptr || !request->is_object()) {
    return Error{"AdmissionReview.request: missing"};
  }
  s = codec::ReadString(*request, "uid", "AdmissionReview.request", &req.uid);
  if (!s.ok()) return Error{s.message()};
  if (req.uid.empty()) return Error{"AdmissionReview.request.uid: missing"};
  s = codec::ReadString(*request, "operation", "AdmissionReview.request", &req.operation);
  if (!s) return Error{s.message()};
  s = codec::ReadString(*request, "namespace", "AdmissionReview.request", &req.ns);
  if (!s.ok()) return Error{s.message()};
  const Json* object = FindKey(*request, "object");
  if (object == nullptr || !object->is_object()) {
    return Error{"AdmissionReview.request.object: missing"};
  }
  req.object = *object;
  return req;
}

AdmissionVerdict ReviewPod(const Json& pod_json, const WebhookOptions& options,
                           const config::NvidiaConfig& config,
                           const std::optional<state::QuotaHeadroom>& quota,
                           const MigKindsSource& mig_kinds) {
  auto pod = codec::DecodePod(pod_json);
  if (!pod.ok()) return Deny(pod.error().message, 400);
  const std::string who =
      "pod " + (pod->name.empty() ? std::string("(generated name)") : pod->Key());
  if (pod->containers.empty()) return Deny(who + ": pod has no containers");
  const std::string& current = pod->scheduler_name;
  if (!current.empty() &&
      (current != "default-scheduler" || !options.force_overwrite_default_scheduler) &&
      (options.scheduler_name.empty() || current != options.scheduler_name)) {
    AdmissionVerdict skip;
    skip.message = "pod already has different scheduler assigned";
    return skip;
  }
  auto admitted = sched::ApplyAdmissionDefaults(*pod, config);
  if (!admitted.ok()) return Deny(who + ": " + admitted.error().message);
  AdmissionVerdict verdict;
  if (!admitted->has_gpu) return verdict;
  // A request the scheduler cannot use would leave the pod Pending with a filter error; saying so
  // at creation is kinder.
  auto request = sched::DerivePodRequest(admitted->pod, config);
  if (!request.ok()) return Deny(who + ": " + request.error().message);
  if (!pod->node_name.empty()) return Deny(who + ": pod has node assigned");
  if (quota && !quota->Admits(sched::AdmissionQuotaUse(*request))) {
    // HAMi's words first (clients match them), then what does not fit.
    const state::QuotaUse use = sched::AdmissionQuotaUse(*request);
    std::string detail;
    if (quota->mem && use.mem > *quota->mem) {
      detail = config.resource_memory_name + " " + std::to_string(use.mem) + " MiB asked, " +
               std::to_string(std::max<int64_t>(*quota->mem, 0)) + " MiB left";
    }
    if (quota->cores && use.cores > *quota->cores) {
      detail += (detail.empty() ? "" : "; ") + config.resource_core_name + " " +
                std::to_string(use.cores) + " asked, " +
                std::to_string(std::max<int64_t>(*quota->cores, 0)) + " left";
    }
    return Deny(who + ": exceeding resource quota (" + detail + ")");
  }
  if (mig_kinds) {
    // Preferences that do not parse leave the pod to the filter, which names the annotation.
    if (auto prefs = sched::ParsePreferences(admitted->pod, sched::PolicyDefaults{}); prefs.ok()) {
      const std::vector<sched::MigGpuKind> kinds = mig_kinds();
      if (!kinds.empty()) {
        verdict.warnings = sched::FormatNearMisses(sched::FindNearMisses(*request, *prefs, kinds));
      }
    }
  }
  for (const auto& change : admitted->changes) {
    AddLimit(pod_json, change.init, change.container, change.resource, change.value,
             &verdict.patch);
  }
  if (!options.scheduler_name.empty() && current != options.scheduler_name) {
    verdict.patch.push_back(
        {{"op", "add"}, {"path", "/spec/schedulerName"}, {"value", options.scheduler_name}});
  }
  return verdict;
}

std::string EncodeAdmissionReview(const AdmissionRequest& request,
                                  const AdmissionVerdict& verdict) {
  Json response = {{"uid", request.uid}, {"allowed", verdict.allowed}};
  if (!verdict.allowed) {
    response["status"] = {{"code", verdict.code}, {"message", verdict.message}};
  } else if (!verdict.message.empty()) {
    response["status"] = {{"code", 200}, {"message", verdict.message}};
  }
  if (verdict.allowed && !verdict.warnings.empty()) response["warnings"] = verdict.warnings;
  if (verdict.allowed && !verdict.patch.empty()) {
    response["patchType"] = "JSONPatch";
    response["patch"] = Base64Encode(verdict.patch.dump());
  }
  Json out = {
      {"apiVersion", request.api_version}, {"kind", "AdmissionReview"}, {"response", response}};
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string EncodeAdmissionError(const std::string& api_version, const std::string& uid,
                                 const std::string& message) {
  Json out = {
      {"apiVersion", api_version.empty() ? std::string(kV1) : api_version},
      {"kind", "AdmissionReview"},
      {"response",
       {{"uid", uid}, {"allowed", false}, {"status", {{"code", 400}, {"message", message}}}}}};
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace tessera::extender
