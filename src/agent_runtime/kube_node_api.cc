#include "agent_runtime/kube_node_api.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "adapters/kube/events.h"
#include "adapters/kube/object_writes.h"
#include "adapters/kube/url.h"
#include "core/codec/k8s_objects.h"

namespace tessera::agent_runtime {

namespace {

// Twice the API server's bookmark interval (about a minute): a pod watch silent for longer
// has died without a word and is started again.
constexpr std::chrono::seconds kPodWatchSilenceLimit{120};

int64_t MillisSinceEpoch(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// Whether a 404's body is the API server's Status NotFound for the pod `name`:
// {"kind":"Status","reason":"NotFound","details":{"name":"<name>","kind":"pods"},...}.
bool IsNotFoundOfPod(const std::string& body, const std::string& name) {
  auto status = kube::Json::parse(body, nullptr, false);
  auto text = [](const kube::Json& j, const char* key) {
    return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                  : std::string();
  };
  if (text(status, "kind") != "Status" || text(status, "reason") != "NotFound") return false;
  if (!status.contains("details")) return false;
  const kube::Json& details = status["details"];
  return text(details, "kind") == "pods" && text(details, "name") == name;
}

kube::Json AnnotationsPatch(const agent::AnnotationPatch& patch) {
  kube::Json annotations = kube::Json::object();
  for (const auto& [k, v] : patch) annotations[k] = v ? kube::Json(*v) : kube::Json(nullptr);
  return kube::Json{{"annotations", annotations}};
}

}  // namespace

KubeNodeApi::KubeNodeApi(kube::Client& client, std::string node_name)
    : client_(client), node_name_(std::move(node_name)), events_(client, "tessera-agent") {}

KubeNodeApi::~KubeNodeApi() { Stop(); }

void KubeNodeApi::Start(std::function<void()> on_pods_changed) {
  on_change_ = std::move(on_pods_changed);
  kube::InformerHandlers handlers;
  handlers.on_replace = [this](const std::vector<kube::Json>& objects) {
    // Swapped in whole: a reader must never see the cache empty halfway through a relist (its
    // freshness would still vouch for it, and every instance would look unclaimed).
    std::map<std::string, model::Pod> listed;
    for (const auto& o : objects) {
      auto pod = codec::DecodePod(o);
      if (!pod.ok()) {
        spdlog::warn("pod informer: {}", pod.error().message);
        continue;
      }
      listed[pod->uid] = std::move(pod.value());
    }
    {
      std::lock_guard lock(mu_);
      pods_ = std::move(listed);
    }
    if (on_change_) on_change_();
  };
  handlers.on_upsert = [this](const kube::Json& o) {
    Upsert(o);
    if (on_change_) on_change_();
  };
  handlers.on_delete = [this](const kube::Json& o) {
    Remove(o);
    if (on_change_) on_change_();
  };
  kube::InformerOptions options;
  options.field_selector = "spec.nodeName=" + node_name_;
  options.watch_silence_limit = kPodWatchSilenceLimit;
  informer_ = std::make_unique<kube::Informer>(client_, "/api/v1/pods", handlers, options);
  informer_->Start();
  events_.Start();
}

void KubeNodeApi::Stop() {
  if (informer_) informer_->Stop();
  events_.Stop();
}

void KubeNodeApi::Upsert(const kube::Json& object) {
  auto pod = codec::DecodePod(object);
  if (!pod.ok()) {
    spdlog::warn("pod informer: {}", pod.error().message);
    return;
  }
  std::lock_guard lock(mu_);
  pods_[pod->uid] = std::move(pod.value());
}

void KubeNodeApi::Remove(const kube::Json& object) {
  auto pod = codec::DecodePod(object);
  if (!pod.ok()) return;
  std::lock_guard lock(mu_);
  pods_.erase(pod->uid);
}

agent::ApiResult<std::vector<model::Pod>> KubeNodeApi::PodsOnNode(bool fresh) {
  if (!fresh && synced()) {
    std::lock_guard lock(mu_);
    std::vector<model::Pod> out;
    for (const auto& [uid, pod] : pods_) out.push_back(pod);
    return out;
  }
  const std::string path =
      "/api/v1/pods?fieldSelector=" + kube::EscapeUrlComponent("spec.nodeName=" + node_name_);
  kube::Response r = client_.Get(path);
  if (!r.ok()) {
    ++api_errors_;
    return agent::ApiFailure(static_cast<int>(r.status),
                             "list pods on " + node_name_ + ": " + r.Describe());
  }
  auto json = kube::Json::parse(r.body, nullptr, false);
  if (json.is_discarded() || !json.contains("items") || !json["items"].is_array()) {
    return agent::ApiFailure(0, "list pods on " + node_name_ + ": not a pod list");
  }
  std::vector<model::Pod> out;
  for (const auto& item : json["items"]) {
    auto pod = codec::DecodePod(item);
    if (pod.ok()) out.push_back(std::move(pod.value()));
  }
  return out;
}

agent::ApiResult<agent::PodView> KubeNodeApi::PodViewOnNode() {
  if (synced()) {
    // Freshness before the copy: the copy then holds at least every change up to it.
    const int64_t fresh = MillisSinceEpoch(informer_->last_fresh());
    std::lock_guard lock(mu_);
    agent::PodView view;
    view.fresh_ms = fresh;
    for (const auto& [uid, pod] : pods_) view.pods.push_back(pod);
    return view;
  }
  const int64_t asked = MillisSinceEpoch(std::chrono::system_clock::now());
  auto listed = PodsOnNode(true);
  if (!listed.ok()) return listed.error();
  return agent::PodView{std::move(listed.value()), asked};
}

agent::ApiResult<std::optional<model::Pod>> KubeNodeApi::ReadPod(const std::string& ns,
                                                                 const std::string& name) {
  // No resourceVersion: the API server answers from etcd with a quorum read, never from its
  // watch cache, so the answer holds every change made before it was asked for.
  const std::string what = "read pod " + ns + "/" + name;
  kube::Response r = client_.Get(kube::PodPath(ns, name));
  if (r.status == 404) {
    // Only the API server's own NotFound for this very pod proves it absent: a 404 from a
    // proxy or for a wrong path says nothing about the pod.
    if (IsNotFoundOfPod(r.body, name)) {
      return std::optional<model::Pod>{};
    }
    ++api_errors_;
    return agent::ApiFailure(
        0, what + ": " + r.Describe() + ", not the API server's NotFound for the pod");
  }
  if (!r.ok()) {
    ++api_errors_;
    return agent::ApiFailure(static_cast<int>(r.status), what + ": " + r.Describe());
  }
  auto json = kube::Json::parse(r.body, nullptr, false);
  auto pod = codec::DecodePod(json.is_discarded() ? kube::Json{} : json);
  if (!pod.ok()) return agent::ApiFailure(0, what + ": " + pod.error().message);
  return std::optional<model::Pod>{std::move(pod.value())};
}

agent::ApiResult<model::Node> KubeNodeApi::GetNode() {
  kube::Response r = client_.Get(kube::NodePath(node_name_));
  if (!r.ok()) {
    ++api_errors_;
    return agent::ApiFailure(static_cast<int>(r.status),
                             "get node " + node_name_ + ": " + r.Describe());
  }
  auto json = kube::Json::parse(r.body, nullptr, false);
  auto node = codec::DecodeNode(json.is_discarded() ? kube::Json{} : json);
  if (!node.ok())
    return agent::ApiFailure(0, "get node " + node_name_ + ": " + node.error().message);
  return node.value();
}

agent::ApiResult<model::Pod> KubeNodeApi::PatchPod(const model::Pod& pod,
                                                   const agent::AnnotationPatch& patch,
                                                   const std::string& resource_version) {
  kube::Response response;
  auto patched = kube::MergePatchPodMetadata(client_, pod.ns, pod.name, AnnotationsPatch(patch),
                                             resource_version, &response);
  if (!patched.ok()) {
    ++api_errors_;
    return agent::ApiFailure(static_cast<int>(response.status), patched.error().message);
  }
  auto decoded = codec::DecodePod(patched.value());
  if (!decoded.ok()) return agent::ApiFailure(0, decoded.error().message);
  Upsert(patched.value());
  return decoded.value();
}

agent::ApiResult<model::Node> KubeNodeApi::PatchNode(const agent::AnnotationPatch& patch,
                                                     const std::string& resource_version) {
  kube::Response response;
  auto patched = kube::MergePatchNodeMetadata(client_, node_name_, AnnotationsPatch(patch),
                                              resource_version, &response);
  if (!patched.ok()) {
    ++api_errors_;
    return agent::ApiFailure(static_cast<int>(response.status), patched.error().message);
  }
  auto decoded = codec::DecodeNode(patched.value());
  if (!decoded.ok()) return agent::ApiFailure(0, decoded.error().message);
  return decoded.value();
}

agent::ApiResult<model::Pod> KubeNodeApi::FailPod(const model::Pod& pod, const std::string& reason,
                                                  const std::string& message) {
  kube::Response response;
  auto failed = kube::FailPod(client_, pod.ns, pod.name, pod.uid, reason, message, &response);
  if (!failed.ok()) {
    ++api_errors_;
    return agent::ApiFailure(static_cast<int>(response.status), failed.error().message);
  }
  auto decoded = codec::DecodePod(failed.value());
  if (!decoded.ok()) return agent::ApiFailure(0, decoded.error().message);
  Upsert(failed.value());
  return decoded.value();
}

void KubeNodeApi::PodEvent(const model::Pod& pod, const std::string& reason,
                           const std::string& message, bool warning) {
  kube::EventSpec e = kube::PodEvent(pod.ns, pod.name, pod.uid, warning, reason, message);
  e.reporting_instance = node_name_;
  events_.Record(std::move(e));
}

void KubeNodeApi::NodeEvent(const std::string& reason, const std::string& message, bool warning) {
  kube::EventSpec e = kube::NodeEvent(node_name_, warning, reason, message);
  e.reporting_instance = node_name_;
  events_.Record(std::move(e));
}

}  // namespace tessera::agent_runtime
