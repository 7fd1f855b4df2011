#pragma once

// The agent's HTTP endpoints: /healthz (the process runs), /readyz (started: discovered,
// published, adopted and registered with the kubelet) and /metrics (Prometheus text), on the
// same hostile-network listener as `tessera serve` (src/adapters/http, docs/security.md).

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "adapters/http/listener.h"
#include "agent_runtime/agent_metrics.h"
#include "core/common/result.h"

namespace tessera::agent_runtime {

class AgentHttp {
 public:
  AgentHttp(AgentMetrics& metrics, std::function<bool()> ready,
            http::ListenerLimits limits = AgentLimits());
  ~AgentHttp();
  AgentHttp(const AgentHttp&) = delete;
  AgentHttp& operator=(const AgentHttp&) = delete;

  // "host:port"; port 0 picks a free one (see port()). Serves on a thread of its own.
  Status Listen(const std::string& bind);
  void Stop();
  int port() const { return listener_ ? listener_->port() : 0; }

  // Probes and a scrape need little: two workers, small bodies, a short deadline.
  static http::ListenerLimits AgentLimits();

 private:
  AgentMetrics& metrics_;
  std::function<bool()> ready_;
  http::ListenerLimits limits_;
  std::unique_ptr<http::Listener> listener_;
  std::thread thread_;
};

}  // namespace tessera::agent_runtime
