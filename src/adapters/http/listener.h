#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adapters/http/http_message.h"
#include "core/common/result.h"

namespace tessera::http {

// Where a route's handler runs. kInline: on the I/O thread, for answers that take microseconds
// and must never wait behind work (liveness). kProbe: a small queue of its own (readiness,
// metrics), so a flood of verbs cannot starve the probes. kWork: the main workers, for the
// trusted callers' requests on kube-scheduler's serial path (filter). kBind: workers of their
// own for requests that wait on the API server and arrive many at once (kube-scheduler binds
// concurrently), so they never hold the workers a filter waits for. kOpen: workers of their own
// for what any client may send (the webhook, the read endpoints), so such a client cannot take
// the workers kube-scheduler waits for.
enum class Lane { kInline, kProbe, kWork, kBind, kOpen };

// Who may send a request, checked once its header is read and before its body is: a refusal
// costs neither the body's memory nor a worker.
enum class Gate {
  kAnyone,
  // The peer is on this host (kube-scheduler in the same pod calls 127.0.0.1), or it presented
  // a TLS client certificate signed by the listener's client CA.
  kLocalOrClientCertificate,
};

using Handler = std::function<Response(const Request&)>;

struct Route {
  std::string method;  // "GET" or "POST"
  std::string path;    // exact
  Lane lane = Lane::kWork;
  Gate gate = Gate::kAnyone;
  Handler handler;
};

// Limits for a network where some clients are hostile. Each one bounds what a single client can
// hold: time, memory, a worker, a connection.
struct ListenerLimits {
  size_t max_body_bytes = 16u << 20;  // decoded bytes, chunked or not
  size_t max_header_bytes = 16u << 10;
  size_t max_header_fields = 100;
  // From a request's first byte to its last: a client sending one byte a second gets no more.
  std::chrono::milliseconds request_deadline{std::chrono::seconds(10)};
  std::chrono::milliseconds tls_handshake_deadline{std::chrono::seconds(5)};
  std::chrono::milliseconds write_deadline{std::chrono::seconds(10)};
  // A kept-alive connection waiting for its next request: longer than the 90 s a Go client
  // (kube-scheduler) keeps an idle connection, so the client, not the server, closes it and a
  // request never races a close.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(120)};
  // Open connections at most; at the limit the longest-idle one is closed to admit a new one,
  // or, with none idle, the new one is closed.
  size_t max_connections = 10000;
  // Request bodies held in memory by all connections together: beyond it a request is answered
  // 503 before its body is read.
  size_t max_buffered_body_bytes = 256u << 20;
  size_t io_threads = 1;
  size_t work_threads = 8;
  size_t work_queue = 64;  // requests waiting for a worker; beyond: 503
  // Mostly waiting on the API server, so many threads cost little CPU; the queue holds a burst
  // of kube-scheduler's concurrent binds.
  size_t bind_threads = 32;
  size_t bind_queue = 512;
  size_t probe_threads = 1;
  size_t probe_queue = 16;
  size_t open_threads = 4;
  size_t open_queue = 32;
  // Bodies above large_body_bytes read or handled at once, at most: parsing a few of them takes
  // the cores the other requests need. Beyond: 503 before the body is read.
  size_t large_body_bytes = 1u << 20;
  size_t max_large_bodies = 2;
};

struct ListenerOptions {
  std::string bind = "127.0.0.1:8080";  // HOST:PORT; port 0 picks a free one
  std::string flag = "--http-bind";     // names the address in errors
  std::string tls_cert_file;            // both set: HTTPS, reloaded when the files change
  std::string tls_key_file;
  std::string client_ca_file;  // TLS only: client certificates it signed are trusted
  ListenerLimits limits;
};

// What the listener refused or cut short, by cause (for /metrics and the adversarial suite).
struct ListenerCounters {
  uint64_t connections_accepted = 0;
  uint64_t connections_open = 0;
  uint64_t connections_evicted = 0;  // idle ones closed to admit new ones
  uint64_t connections_refused = 0;  // closed at once: at the limit with none idle
  uint64_t requests = 0;
  uint64_t deadline_exceeded = 0;  // TLS handshake, request or write past its deadline
  uint64_t too_large = 0;          // 413 and 431
  uint64_t unsupported_encoding = 0;
  uint64_t malformed = 0;   // 400 from the parser
  uint64_t overloaded = 0;  // 503: work queue full or body budget spent
  uint64_t forbidden = 0;   // a gate refused the peer
};

// An event-driven HTTP/1.1 server (Boost.Beast on Asio): connections cost no thread while they
// wait, and every request is read under the limits above before a handler sees it.
class Listener {
 public:
  Listener(ListenerOptions options, std::vector<Route> routes);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Binds the socket (SO_REUSEADDR, never SO_REUSEPORT: a taken port fails here); errors name
  // the flag, the address or the certificate file.
  Status Listen();
  // Runs the I/O threads until Stop(); call from a thread of its own. Returns at once after Stop.
  void Serve();
  void Stop();
  int port() const;
  uint64_t tls_reloads() const;  // certificate loads: 1 after Listen with TLS, more on rotation
  ListenerCounters counters() const;

  struct Impl;  // public only for the connections in listener.cc

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::http
