#include "scheduler_runtime/http_server.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <optional>

#include "scheduler/service_metrics.h"
#include "scheduler_runtime/defrag_endpoint.h"

namespace tessera::scheduler_runtime {

// Generated from scheduler_runtime/ui/index.html (src/CMakeLists.txt).
const char* UiPageHtml();

namespace {

constexpr const char* kJson = "application/json";

http::Response Json(std::string body) {
  http::Response response;
  response.content_type = kJson;
  response.body = std::move(body);
  return response;
}

// One handler shape for the four POST verbs: an empty body is a 400, anything else is the
// service's answer (which carries its own errors).
template <class Fn>
http::Handler Post(Fn fn) {
  return [fn](const http::Request& request) {
    if (request.body.empty()) return http::Response::Text(400, "Please send a request body");
    return Json(fn(request.body));
  };
}

// The page and its state take no query: anything there is refused rather than ignored.
std::optional<http::Response> RefuseQuery(const http::Request& request) {
  if (request.query.empty()) return std::nullopt;
  return http::Response::Text(400, "unexpected query parameter \"" + request.query.front().first +
                                       "\" (this page takes none; search is in the page)\n");
}

// The page takes `pod=NAMESPACE/NAME` and `defrag`: the script reads them and opens that pod's
// explanation and the defragmentation plan (the server sends the same static page whatever they
// say).
std::optional<http::Response> RefusePageQuery(const http::Request& request) {
  for (const auto& [name, value] : request.query) {
    if (name != "pod" && name != "defrag") {
      return http::Response::Text(400,
                                  "unexpected query parameter \"" + name +
                                      "\" (this page takes only pod=NAMESPACE/NAME and defrag)\n");
    }
  }
  if (request.ParamCount("pod") > 1 || request.ParamCount("defrag") > 1) {
    return http::Response::Text(400, "expected one pod and at most one defrag\n");
  }
  return std::nullopt;
}

// Wraps a handler of data that names pods, nodes and GPUs: the caller must be allowed to read
// the path (delegated to the API server), unless no check is configured.
http::Handler Guarded(const ReadAccessCheck& check, http::Handler handler) {
  if (!check) return handler;
  return [check, handler = std::move(handler)](const http::Request& request) {
    const ReadAccessDecision decision = check(request.authorization, request.path);
    if (decision.status == 200) return handler(request);
    http::Response refused = http::Response::Text(decision.status, decision.reason + "\n");
    if (decision.status == 401) refused.headers.emplace_back("WWW-Authenticate", "Bearer");
    return refused;
  };
}

// The HTTP status of an /explain outcome.
int ExplainStatus(scheduler::ExplainResult::Outcome outcome) {
  using Outcome = scheduler::ExplainResult::Outcome;
  switch (outcome) {
    case Outcome::kOk:
      return 200;
    case Outcome::kBadRequest:
      return 400;
    case Outcome::kNotFound:
      return 404;
  }
  return 500;
}

http::Response Explain(const scheduler::ReadViews& reads, const http::Request& request) {
  for (const auto& [name, value] : request.query) {
    if (name != "pod" && name != "format" && name != "node") {
      return http::Response::Text(
          400, "unknown query parameter \"" + name + "\" (expected pod, format, node)\n");
    }
  }
  if (request.ParamCount("pod") != 1 || request.ParamCount("format") > 1 ||
      request.ParamCount("node") > 1) {
    return http::Response::Text(
        400, "expected one pod=NAMESPACE/NAME, at most one format=text|json and one node=NAME\n");
  }
  const std::string node = request.Param("node");
  if (node.size() > 253 || node.find_first_of(" /\t\n") != std::string::npos) {
    return http::Response::Text(400, "node: not a node name\n");
  }
  const std::string format = request.ParamCount("format") == 1 ? request.Param("format") : "text";
  if (format != "text" && format != "json") {
    return http::Response::Text(400, "format: expected text or json, got \"" + format + "\"\n");
  }
  auto answer = reads.Explain(request.Param("pod"), format == "json", node);
  http::Response response =
      http::Response::Text(ExplainStatus(answer.outcome), std::move(answer.body));
  response.content_type = answer.json ? kJson : "text/plain; charset=utf-8";
  return response;
}

// Names a /ui/state body: it changes whenever the body does, and differs between processes.
std::string UiStateETag(const scheduler::UiStateBody& state) {
  return "\"" + std::to_string(state.instance) + "-" + std::to_string(state.version) + "-" +
         std::to_string(state.usage_version) + "\"";
}

http::Response UiState(const scheduler::ReadViews& reads, const http::Request& request) {
  if (auto refused = RefuseQuery(request)) return *refused;
  const auto state = reads.UiState();
  const std::string etag = UiStateETag(state);
  http::Response response;
  // The page polls; an unchanged state costs a 304 and no body.
  response.headers.emplace_back("Cache-Control", "no-cache");
  response.headers.emplace_back("ETag", etag);
  if (request.if_none_match == etag) {
    response.status = 304;
    return response;
  }
  response.content_type = kJson;
  response.body = *state.json;
  return response;
}

prometheus::ClientMetric Sample(std::vector<prometheus::ClientMetric::Label> labels, double value,
                                bool counter) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  if (counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  return metric;
}

// The process's heap as glibc counts it (mallinfo2): what is in use, what is free but kept in
// its arenas, and what is mapped on its own; with the resident size, this tells live data from
// memory the allocator holds.
prometheus::MetricFamily HeapFamily() {
  const struct mallinfo2 info = mallinfo2();
  prometheus::MetricFamily heap{
      "tessera_heap_bytes",
      "The heap by glibc's count (mallinfo2): in_use, free (kept in the "
      "allocator's arenas) and mmapped (large blocks mapped on their own)",
      prometheus::MetricType::Gauge,
      {}};
  const std::pair<const char*, size_t> kinds[] = {
      {"in_use", info.uordblks}, {"free", info.fordblks}, {"mmapped", info.hblkhd}};
  for (const auto& [kind, bytes] : kinds) {
    heap.metric.push_back(Sample({{"kind", kind}}, static_cast<double>(bytes), false));
  }
  return heap;
}

// What this listener refused or cut short, by cause, and its open connections: the signs of a
// client that is slow, oversized or too many.
std::vector<prometheus::MetricFamily> ListenerFamilies(const http::ListenerCounters& c,
                                                       const std::string& listener) {
  prometheus::MetricFamily refused{
      "tessera_http_refused_total",
      "Requests and connections the HTTP listener refused or cut short, by reason "
      "(docs/security.md)",
      prometheus::MetricType::Counter,
      {}};
  const std::pair<const char*, uint64_t> reasons[] = {{"deadline", c.deadline_exceeded},
                                                      {"too_large", c.too_large},
                                                      {"encoding", c.unsupported_encoding},
                                                      {"malformed", c.malformed},
                                                      {"overloaded", c.overloaded},
                                                      {"forbidden", c.forbidden},
                                                      {"connection_limit", c.connections_refused},
                                                      {"idle_evicted", c.connections_evicted}};
  for (const auto& [reason, count] : reasons) {
    refused.metric.push_back(
        Sample({{"listener", listener}, {"reason", reason}}, static_cast<double>(count), true));
  }
  prometheus::MetricFamily open{"tessera_http_connections_open",
                                "Connections open on the HTTP listener",
                                prometheus::MetricType::Gauge,
                                {}};
  open.metric.push_back(
      Sample({{"listener", listener}}, static_cast<double>(c.connections_open), false));
  return {refused, open};
}

std::vector<http::Route> Routes(scheduler::SchedulerService& svc, const HttpOptions& options,
                                const HttpServer* server) {
  using http::Gate;
  using http::Lane;
  std::vector<http::Route> routes;
  if (!options.metrics_only) {
    routes.push_back({"GET", "/healthz", Lane::kInline, Gate::kAnyone,
                      [](const http::Request&) { return http::Response::Text(200, "ok"); }});
    routes.push_back({"GET", "/readyz", Lane::kProbe, Gate::kAnyone, [&svc](const http::Request&) {
                        std::string why;
                        if (svc.view.Ready(&why)) return http::Response::Text(200, "ok");
                        return http::Response::Text(503, why);
                      }});
  }
  HttpEndpoints e = options.endpoints;
  if (options.metrics_only) e = HttpEndpoints{false, false, false, true};
  if (e.metrics) {
    const bool legacy = options.legacy_metrics;
    const std::string flag = options.flag;
    routes.push_back(
        {"GET", "/metrics", Lane::kProbe, Gate::kAnyone,
         Guarded(options.read_access, [&svc, legacy, server, flag](const http::Request&) {
           const std::string state_text = svc.reads.StateMetricsText(legacy);
           std::vector<prometheus::MetricFamily> own = ListenerFamilies(server->counters(), flag);
           own.push_back(HeapFamily());
           http::Response response =
               http::Response::Text(200, svc.view.metrics().RenderWith(state_text, own));
           response.content_type = "text/plain; version=0.0.4";
           return response;
         })});
  }
  if (e.read_endpoints) {
    // The page is static (no cluster data): it opens for anyone and asks for a token when its
    // state is refused.
    routes.push_back({"GET", "/ui", Lane::kOpen, Gate::kAnyone, [](const http::Request& request) {
                        if (auto refused = RefusePageQuery(request)) return *refused;
                        http::Response response = http::Response::Text(200, UiPageHtml());
                        response.content_type = "text/html; charset=utf-8";
                        return response;
                      }});
    routes.push_back({"GET", "/ui/state", Lane::kOpen, Gate::kAnyone,
                      Guarded(options.read_access, [&svc](const http::Request& request) {
                        return UiState(svc.reads, request);
                      })});
    routes.push_back({"GET", "/explain", Lane::kOpen, Gate::kAnyone,
                      Guarded(options.read_access, [&svc](const http::Request& request) {
                        return Explain(svc.reads, request);
                      })});
    auto defrag = std::make_shared<DefragEndpoint>(svc);
    routes.push_back({"GET", "/defrag", Lane::kOpen, Gate::kAnyone,
                      Guarded(options.read_access, [defrag](const http::Request& request) {
                        return defrag->Handle(request);
                      })});
  }
  if (e.extender_verbs) {
    const Gate local = Gate::kLocalOrClientCertificate;
    routes.push_back({"POST", "/filter", Lane::kWork, local,
                      Post([&svc](const std::string& b) { return svc.verbs.Filter(b); })});
    routes.push_back({"POST", "/prioritize", Lane::kWork, local,
                      Post([&svc](const std::string& b) { return svc.verbs.Prioritize(b); })});
    // Binds wait on the API server and come many at once: their own lane, so that the filter
    // on kube-scheduler's serial path never queues behind them. With HAMi's node lock they share
    // the filter's workers on purpose: the filter sends each pod past the nodes whose binds are
    // under way, so a filter running ahead of the binds would spread a burst over as many nodes
    // as pods wait to bind (887 nodes for 1 000 MIG pods, against 44, docs/performance.md).
    const Lane bind_lane = svc.view.options().hami_node_lock ? Lane::kWork : Lane::kBind;
    routes.push_back({"POST", "/bind", bind_lane, local,
                      Post([&svc](const std::string& b) { return svc.verbs.Bind(b); })});
    // kube-scheduler's preemptVerb: the same gate, lane and limits as filter. The protocol has
    // no Error field, so a failure is a failed call.
    routes.push_back({"POST", "/preempt", Lane::kWork, local, [&svc](const http::Request& request) {
                        if (request.body.empty()) {
                          return http::Response::Text(400, "Please send a request body");
                        }
                        auto answer = svc.verbs.Preempt(request.body);
                        if (!answer.error.empty()) {
                          return http::Response::Text(answer.bad_request ? 400 : 503,
                                                      answer.error + "\n");
                        }
                        return Json(std::move(answer.body));
                      }});
  }
  if (e.webhook) {
    routes.push_back({"POST", "/webhook", Lane::kOpen, Gate::kAnyone,
                      Post([&svc](const std::string& b) { return svc.verbs.Webhook(b); })});
  }
  return routes;
}

}  // namespace

HttpServer::HttpServer(scheduler::SchedulerService& service, const HttpOptions& options) {
  http::ListenerOptions lo;
  lo.bind = options.bind;
  lo.flag = options.flag;
  if (!options.metrics_only) {
    lo.tls_cert_file = options.tls_cert_file;
    lo.tls_key_file = options.tls_key_file;
    lo.client_ca_file = options.client_ca_file;
  }
  lo.limits = options.limits;
  listener_ = std::make_unique<http::Listener>(std::move(lo), Routes(service, options, this));
}

HttpServer::~HttpServer() = default;

Status HttpServer::Listen() { return listener_->Listen(); }
void HttpServer::Serve() { listener_->Serve(); }
void HttpServer::Stop() { listener_->Stop(); }
int HttpServer::port() const { return listener_->port(); }
uint64_t HttpServer::tls_reloads() const { return listener_->tls_reloads(); }
http::ListenerCounters HttpServer::counters() const { return listener_->counters(); }

}  // namespace tessera::scheduler_runtime
