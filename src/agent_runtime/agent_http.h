#pragma once

// The agent's HTTP endpoints: /healthz (the process runs), /readyz (started: discovered,
// published, adopted and registered with the kubelet) and /metrics (Prometheus text).

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "agent_runtime/agent_metrics.h"
#include "core/common/result.h"

namespace httplib {
class Server;
}

namespace tessera::agent_runtime {

class AgentHttp {
 public:
  AgentHttp(AgentMetrics& metrics, std::function<bool()> ready);
  ~AgentHttp();
  // "host:port"; port 0 picks a free one (see port()).
  Status Listen(const std::string& bind);
  void Stop();
  int port() const { return port_; }

 private:
  AgentMetrics& metrics_;
  std::function<bool()> ready_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace tessera::agent_runtime
