#include "agent_runtime/agent_http.h"

#include <prometheus/text_serializer.h>

namespace tessera::agent_runtime {

AgentHttp::AgentHttp(AgentMetrics& metrics, std::function<bool()> ready,
                     http::ListenerLimits limits)
    : metrics_(metrics), ready_(std::move(ready)), limits_(limits) {}

AgentHttp::~AgentHttp() { Stop(); }

http::ListenerLimits AgentHttp::AgentLimits() {
  http::ListenerLimits limits;
  limits.max_body_bytes = 64u << 10;
  limits.max_buffered_body_bytes = 1u << 20;
  limits.request_deadline = std::chrono::seconds(5);
  limits.write_deadline = std::chrono::seconds(5);
  limits.work_threads = 2;
  limits.work_queue = 16;
  limits.max_connections = 1024;
  return limits;
}

Status AgentHttp::Listen(const std::string& bind) {
  using http::Gate;
  using http::Lane;
  std::vector<http::Route> routes;
  routes.push_back({"GET", "/healthz", Lane::kInline, Gate::kAnyone,
                    [](const http::Request&) { return http::Response::Text(200, "ok\n"); }});
  routes.push_back({"GET", "/readyz", Lane::kProbe, Gate::kAnyone, [this](const http::Request&) {
                      const bool ok = ready_();
                      return http::Response::Text(ok ? 200 : 503, ok ? "ok\n" : "starting\n");
                    }});
  routes.push_back({"GET", "/metrics", Lane::kWork, Gate::kAnyone,
                    [this](const http::Request& request) { return Metrics(request); }});
  http::ListenerOptions options;
  options.bind = bind;
  options.limits = limits_;
  listener_ = std::make_unique<http::Listener>(std::move(options), std::move(routes));
  if (Status s = listener_->Listen(); !s.ok()) {
    listener_.reset();
    return s;
  }
  thread_ = std::thread([this] { listener_->Serve(); });
  return Status::Ok();
}

http::Response AgentHttp::Metrics(const http::Request& request) {
  if (read_access_) {
    // As serve's Guarded(): a bearer token the API server accepts, allowed to `get` the path.
    const kube::AccessDecision decision = read_access_(request.authorization, request.path);
    if (decision.status != 200) {
      http::Response refused = http::Response::Text(decision.status, decision.reason + "\n");
      if (decision.status == 401) refused.headers.emplace_back("WWW-Authenticate", "Bearer");
      return refused;
    }
  }
  prometheus::TextSerializer serializer;
  http::Response response =
      http::Response::Text(200, serializer.Serialize(metrics_.registry().Collect()));
  response.content_type = "text/plain; version=0.0.4";
  return response;
}

void AgentHttp::Stop() {
  if (listener_) listener_->Stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tessera::agent_runtime
