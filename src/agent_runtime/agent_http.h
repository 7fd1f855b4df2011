#pragma once

// The agent's HTTP endpoints: /healthz (the process runs), /readyz (started: discovered,
// published, adopted and registered with the kubelet) and /metrics (Prometheus text), on the
// same hostile-network listener as `tessera serve` (src/adapters/http, docs/security.md).
// /metrics can be put behind a read check (delegated authentication and authorisation, as
// serve's); the probes are always open: they name no pod, node or GPU.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "adapters/http/listener.h"
#include "adapters/kube/delegated_auth.h"
#include "agent_runtime/agent_metrics.h"
#include "core/common/result.h"

namespace tessera::agent_runtime {

// Whether a request may read `path`: kube::DelegatedAuthorizer::Check with verb "get" in the
// agent (200 allowed, 401 no or bad token, 403 not allowed, 503 the API server cannot be asked).
using ReadAccessCheck = std::function<kube::AccessDecision(std::string_view authorization_header,
                                                           std::string_view path)>;

class AgentHttp {
 public:
  AgentHttp(AgentMetrics& metrics, std::function<bool()> ready,
            http::ListenerLimits limits = AgentLimits());
  ~AgentHttp();
  AgentHttp(const AgentHttp&) = delete;
  AgentHttp& operator=(const AgentHttp&) = delete;

  // /metrics answers only requests `check` allows (before Listen); none = anyone.
  void RequireReadAccess(ReadAccessCheck check) { read_access_ = std::move(check); }

  // "host:port"; port 0 picks a free one (see port()). Serves on a thread of its own.
  Status Listen(const std::string& bind);
  void Stop();
  int port() const { return listener_ ? listener_->port() : 0; }

  // Probes and a scrape need little: two workers, small bodies, a short deadline.
  static http::ListenerLimits AgentLimits();

 private:
  http::Response Metrics(const http::Request& request);

  AgentMetrics& metrics_;
  std::function<bool()> ready_;
  http::ListenerLimits limits_;
  ReadAccessCheck read_access_;
  std::unique_ptr<http::Listener> listener_;
  std::thread thread_;
};

}  // namespace tessera::agent_runtime
