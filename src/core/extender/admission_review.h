#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/codec/json_util.h"
#include "core/common/result.h"
#include "core/config/scheduler_config.h"
#include "core/sched/near_miss.h"
#include "core/state/quota_book.h"

// The mutating webhook (hami-protocol.md 8) as a pure function: AdmissionReview in, AdmissionReview
// out. Both admission.k8s.io/v1 and v1beta1 are answered in the version they came in.
namespace tessera::extender {

struct WebhookOptions {
  std::string scheduler_name = "tessera-scheduler";
  // Pods that name default-scheduler are taken over (HAMi's --force-overwrite-default-scheduler).
  bool force_overwrite_default_scheduler = true;
};

struct AdmissionRequest {
  std::string api_version;  // admission.k8s.io/v1 or admission.k8s.io/v1beta1
  std::string uid;
  std::string operation;
  std::string ns;      // request.namespace: the pod's namespace (the object may not say)
  codec::Json object;  // the Pod
};

struct AdmissionVerdict {
  bool allowed = true;
  std::string message;                       // why it was denied, or why it was skipped
  int32_t code = 200;                        // HTTP-like status in response.status when denied
  codec::Json patch = codec::Json::array();  // RFC 6902 operations; empty: no change
  // Admission warnings (response.warnings, which kubectl prints): for an allowed pod.
  std::vector<std::string> warnings;
};

// Errors name the field ("AdmissionReview.request.uid: missing").
Result<AdmissionRequest> DecodeAdmissionReview(std::string_view body);

// Decides for one pod: skip pods of other schedulers, apply HAMi's resource defaults, validate
// every GPU request (a quantity the scheduler could not use is denied here, with the container and
// resource named, instead of leaving the pod Pending), deny privileged GPU containers and GPU pods
// with spec.nodeName preset, deny a GPU pod its namespace's quota cannot hold (`quota`: what the
// namespace may still use; nullopt when no quota applies), and set spec.schedulerName. An
// admitted GPU pod that asks a little more than a MIG profile of the cluster's MIG GPU models
// (`mig_kinds`) gets a warning naming the profile and the memory to ask instead
// (FindNearMisses). The models are asked for only then: reading them walks the cluster's nodes,
// and most pods the webhook sees ask no GPU.
using MigKindsSource = std::function<std::vector<sched::MigGpuKind>()>;
AdmissionVerdict ReviewPod(const codec::Json& pod, const WebhookOptions& options,
                           const config::NvidiaConfig& config,
                           const std::optional<state::QuotaHeadroom>& quota = std::nullopt,
                           const MigKindsSource& mig_kinds = {});

std::string EncodeAdmissionReview(const AdmissionRequest& request, const AdmissionVerdict& verdict);

// An answer for a review that could not be decoded: denied with the decode error (code 400).
std::string EncodeAdmissionError(const std::string& api_version, const std::string& uid,
                                 const std::string& message);

}  // namespace tessera::extender
