#include "app/serve_listeners.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>

#include "adapters/kube/delegated_auth.h"
#include "core/common/duration.h"

namespace tessera::app {

Listeners::Listeners() = default;
Listeners::~Listeners() = default;
Listeners::Listeners(Listeners&&) noexcept = default;
Listeners& Listeners::operator=(Listeners&&) noexcept = default;

namespace {

std::string HostOf(const std::string& bind) {
  std::string host = bind.substr(0, bind.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

// Idle connections cost a descriptor each: the limit is raised to what the system allows, and
// the connection limit kept below it with room for the API client and files.
size_t ConnectionLimit(size_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return wanted;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  constexpr rlim_t kReserved = 256;
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > wanted + kReserved) return wanted;
  const size_t allowed = limit.rlim_cur > kReserved ? limit.rlim_cur - kReserved : 16;
  spdlog::warn("--max-connections {}: only {} open files allowed, so at most {} connections",
               wanted, static_cast<uint64_t>(limit.rlim_cur), allowed);
  return allowed;
}

Result<http::ListenerLimits> ResolveLimits(const ServeOptions& options) {
  http::ListenerLimits limits;
  auto deadline = ParseDuration(options.request_timeout);
  if (!deadline.ok() || deadline.value().count() <= 0) {
    return Error{"--request-timeout " + options.request_timeout +
                 ": want a positive duration such as 10s"};
  }
  limits.request_deadline = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.value());
  limits.write_deadline = limits.request_deadline;
  limits.tls_handshake_deadline = std::min(limits.request_deadline, limits.tls_handshake_deadline);
  if (options.max_request_bytes < 1024) {
    return Error{"--max-request-bytes " + std::to_string(options.max_request_bytes) +
                 ": want at least 1024"};
  }
  limits.max_body_bytes = static_cast<size_t>(options.max_request_bytes);
  limits.max_buffered_body_bytes =
      std::max(limits.max_buffered_body_bytes, 4 * limits.max_body_bytes);
  limits.max_connections = ConnectionLimit(static_cast<size_t>(options.max_connections));
  limits.work_threads = static_cast<size_t>(options.http_workers);
  limits.work_queue = static_cast<size_t>(options.http_queue);
  limits.bind_threads = static_cast<size_t>(options.bind_workers);
  limits.bind_queue = static_cast<size_t>(options.bind_queue);
  return limits;
}

// Who may read /metrics, /ui/state and /explain: `none` answers anyone; `delegated` asks the API
// server (TokenReview, SubjectAccessReview); `auto` is delegated when there is an API server.
Result<scheduler_runtime::ReadAccessCheck> ResolveReadAccess(const ServeOptions& options,
                                                             kube::Client* api,
                                                             Listeners& listeners) {
  const std::string& mode = options.read_auth;
  if (mode != "auto" && mode != "delegated" && mode != "none") {
    return Error{"--read-auth: want auto, delegated or none, got " + mode};
  }
  if (mode == "none") return scheduler_runtime::ReadAccessCheck{};
  if (api == nullptr) {
    if (mode == "delegated") {
      return Error{
          "--read-auth=delegated needs an API server to check tokens; with --cluster "
          "there is none"};
    }
    // No API server (--cluster): open, which is safe only where nobody else can connect.
    for (const std::string* bind : {&options.http_bind, &options.metrics_bind_address}) {
      if (!bind->empty() && !IsLoopbackBind(*bind)) {
        return Error{"--read-auth: " + *bind +
                     " is reachable from the network and, with --cluster, no API server can "
                     "check tokens: bind to 127.0.0.1, or pass --read-auth=none for a trusted "
                     "network"};
      }
    }
    return scheduler_runtime::ReadAccessCheck{};
  }
  listeners.authorizer = std::make_unique<kube::DelegatedAuthorizer>(*api);
  kube::DelegatedAuthorizer* authorizer = listeners.authorizer.get();
  return scheduler_runtime::ReadAccessCheck(
      [authorizer](std::string_view header, std::string_view path) {
        const kube::AccessDecision d = authorizer->Check(header, path, "get");
        if (d.status != 200) spdlog::debug("read {} refused ({}): {}", path, d.status, d.reason);
        return scheduler_runtime::ReadAccessDecision{d.status, d.reason};
      });
}

}  // namespace

bool IsLoopbackBind(const std::string& bind) {
  const std::string host = HostOf(bind);
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

Result<Listeners> OpenListeners(const ServeOptions& options, scheduler::SchedulerService& service,
                                kube::Client* api) {
  Listeners out;
  auto limits = ResolveLimits(options);
  if (!limits.ok()) return limits.error();
  auto read_access = ResolveReadAccess(options, api, out);
  if (!read_access.ok()) return read_access.error();
  const bool separate_extender = !options.extender_bind.empty();

  scheduler_runtime::HttpOptions main;
  main.bind = options.http_bind;
  main.tls_cert_file = options.tls_cert_file;
  main.tls_key_file = options.tls_key_file;
  main.client_ca_file = options.extender_client_ca;
  main.limits = limits.value();
  main.endpoints.extender_verbs = !separate_extender;
  main.read_access = read_access.value();
  main.legacy_metrics = options.legacy_metrics;
  out.http = std::make_unique<scheduler_runtime::HttpServer>(service, main);
  if (Status s = out.http->Listen(); !s.ok()) return Error{s.message()};

  if (separate_extender) {
    scheduler_runtime::HttpOptions verbs = main;
    verbs.bind = options.extender_bind;
    verbs.flag = "--extender-bind";
    verbs.endpoints = scheduler_runtime::HttpEndpoints{true, false, false, false};
    if (options.extender_client_ca.empty()) {
      // Plain HTTP on loopback: kube-scheduler in the same pod; TLS only with client checks.
      verbs.tls_cert_file.clear();
      verbs.tls_key_file.clear();
      if (!IsLoopbackBind(options.extender_bind)) {
        return Error{"--extender-bind " + options.extender_bind +
                     ": the extender verbs bind pods; serve them on 127.0.0.1, or give "
                     "--extender-client-ca (and TLS) to check the callers' certificates"};
      }
    }
    out.extender = std::make_unique<scheduler_runtime::HttpServer>(service, verbs);
    if (Status s = out.extender->Listen(); !s.ok()) return Error{s.message()};
  }
  if (!options.metrics_bind_address.empty()) {
    scheduler_runtime::HttpOptions metrics;
    metrics.bind = options.metrics_bind_address;
    metrics.metrics_only = true;
    metrics.legacy_metrics = options.legacy_metrics;
    metrics.read_access = read_access.value();
    metrics.limits = limits.value();
    metrics.limits.work_threads = 1;
    metrics.flag = "--metrics-bind-address";
    out.metrics = std::make_unique<scheduler_runtime::HttpServer>(service, metrics);
    if (Status s = out.metrics->Listen(); !s.ok()) return Error{s.message()};
  }
  return out;
}

void LogListening(const ServeOptions& options, const Listeners& listeners) {
  const std::string& bind = options.http_bind;
  spdlog::info("tessera serve listening on {}:{} ({}; read endpoints: {})",
               bind.substr(0, bind.rfind(':')), listeners.http->port(),
               options.tls_cert_file.empty() ? "http" : "https",
               listeners.authorizer ? "token checked by the API server" : "open");
  if (listeners.extender) {
    const std::string& eb = options.extender_bind;
    spdlog::info("extender verbs listening on {}:{}", eb.substr(0, eb.rfind(':')),
                 listeners.extender->port());
  }
  if (listeners.metrics) {
    const std::string& mb = options.metrics_bind_address;
    const std::string host = mb.substr(0, mb.rfind(':'));
    spdlog::info("metrics listening on {}:{} (http, /metrics)", host.empty() ? "0.0.0.0" : host,
                 listeners.metrics->port());
  }
}

}  // namespace tessera::app
