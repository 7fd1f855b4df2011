#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "adapters/http/listener.h"
#include "core/common/result.h"
#include "scheduler/scheduler_service.h"

namespace tessera::scheduler_runtime {

// Whether a caller may read /metrics, /ui/state or /explain: 200 yes; 401, 403 or 503 no, with
// a reason for the body. serve wires it to TokenReview + SubjectAccessReview.
struct ReadAccessDecision {
  int status = 200;
  std::string reason;
};
using ReadAccessCheck =
    std::function<ReadAccessDecision(std::string_view authorization_header, std::string_view path)>;

// Which endpoints one listener serves. /healthz and /readyz are on every listener.
struct HttpEndpoints {
  // POST /filter /prioritize /bind: only for callers on this host (kube-scheduler in the same
  // pod) or with a client certificate the listener's client CA signed.
  bool extender_verbs = true;
  bool webhook = true;         // POST /webhook (the API server, over TLS)
  bool read_endpoints = true;  // GET /ui /ui/state /explain
  bool metrics = true;         // GET /metrics
};

struct HttpOptions {
  std::string bind = "127.0.0.1:8080";  // HOST:PORT; port 0 picks a free one
  std::string tls_cert_file;            // both set: HTTPS, reloaded when the files change
  std::string tls_key_file;
  std::string client_ca_file;  // with TLS: trusted signer of extender clients' certificates
  http::ListenerLimits limits;
  HttpEndpoints endpoints;
  // Only GET /metrics, plain HTTP (TLS files ignored): the listener of --metrics-bind-address.
  bool metrics_only = false;
  // nullptr: the read endpoints and /metrics answer anyone who reaches the listener (loopback,
  // or --read-auth=none on a trusted network).
  ReadAccessCheck read_access;
  // /metrics also carries HAMi's legacy names of the GPU usage families (--legacy-metrics).
  bool legacy_metrics = false;
  std::string flag = "--http-bind";  // names the address in errors
};

// The scheduler's HTTP(S) endpoints over an http::Listener: the routes, their lanes and gates,
// read access, status codes and ETags (the scheduler's parts know no HTTP). Malformed bodies get
// a 400 or an Error field, never a crash.
class HttpServer {
 public:
  HttpServer(scheduler::SchedulerService& service, const HttpOptions& options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the socket; errors name the address or the certificate file.
  Status Listen();
  // Serves until Stop(); call from its own thread.
  void Serve();
  void Stop();
  int port() const;
  // Certificate loads so far (1 after Listen with TLS; more after rotations).
  uint64_t tls_reloads() const;
  http::ListenerCounters counters() const;

 private:
  std::unique_ptr<http::Listener> listener_;
};

}  // namespace tessera::scheduler_runtime
