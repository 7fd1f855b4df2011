#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/common/result.h"
#include "scheduler/extender_service.h"

namespace tessera::scheduler_runtime {

struct HttpOptions {
  std::string bind = "127.0.0.1:8080";  // HOST:PORT; port 0 picks a free one
  std::string tls_cert_file;            // both set: HTTPS, reloaded when the files change
  std::string tls_key_file;
  size_t max_request_bytes = 16u << 20;  // ExtenderArgs with full Node lists can be large
  int read_timeout_seconds = 60;
  int write_timeout_seconds = 60;
  int threads = 8;
  // Only GET /metrics: the plain-HTTP listener of --metrics-bind-address (TLS files ignored).
  bool metrics_only = false;
  // /metrics also carries HAMi's legacy names of the GPU usage families (--legacy-metrics).
  bool legacy_metrics = false;
  std::string flag = "--http-bind";  // names the address in errors
};

// The extender's HTTP(S) endpoints: POST /filter /bind /prioritize /webhook, GET /healthz /readyz
// /metrics (with metrics_only: GET /metrics alone). Malformed bodies get a 400 (empty body) or an
// Error field, never a crash.
class HttpServer {
 public:
  HttpServer(scheduler::ExtenderService& service, HttpOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the socket; errors name the address or the certificate file.
  Status Listen();
  // Serves until Stop(); call from its own thread.
  void Serve();
  void Stop();
  int port() const { return port_; }
  // Certificate loads so far (1 after Listen with TLS; more after rotations).
  uint64_t tls_reloads() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  scheduler::ExtenderService& service_;
  HttpOptions options_;
  int port_ = 0;
};

}  // namespace tessera::scheduler_runtime
