#include "agent_runtime/agent_http.h"

#include <httplib.h>
#include <prometheus/text_serializer.h>

namespace tessera::agent_runtime {

AgentHttp::AgentHttp(AgentMetrics& metrics, std::function<bool()> ready)
    : metrics_(metrics), ready_(std::move(ready)), server_(std::make_unique<httplib::Server>()) {
  server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    const bool ok = ready_();
    res.status = ok ? 200 : 503;
    res.set_content(ok ? "ok\n" : "starting\n", "text/plain");
  });
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    prometheus::TextSerializer serializer;
    res.set_content(serializer.Serialize(metrics_.registry().Collect()),
                    "text/plain; version=0.0.4");
  });
}

AgentHttp::~AgentHttp() { Stop(); }

Status AgentHttp::Listen(const std::string& bind) {
  const size_t colon = bind.rfind(':');
  if (colon == std::string::npos) return Error{"--http-bind " + bind + ": want host:port"};
  std::string host = bind.substr(0, colon);
  if (host.empty()) host = "0.0.0.0";
  int port = 0;
  try {
    port = std::stoi(bind.substr(colon + 1));
  } catch (const std::exception&) {
    return Error{"--http-bind " + bind + ": the port is not a number"};
  }
  if (port == 0) {
    port_ = server_->bind_to_any_port(host);
  } else {
    port_ = server_->bind_to_port(host, port) ? port : -1;
  }
  if (port_ <= 0) return Error{"--http-bind " + bind + ": cannot listen"};
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return Status::Ok();
}

void AgentHttp::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tessera::agent_runtime
