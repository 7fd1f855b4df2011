#include "scheduler_runtime/http_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "scheduler/service_metrics.h"
#include "scheduler_runtime/tls_reloader.h"

namespace tessera::scheduler_runtime {

struct HttpServer::Impl {
  std::unique_ptr<TlsReloader> tls;
  std::unique_ptr<httplib::Server> server;
};

// Generated from scheduler_runtime/ui/index.html (src/CMakeLists.txt).
const char* UiPageHtml();

namespace {

constexpr const char* kJson = "application/json";

Result<std::pair<std::string, int>> SplitHostPort(const std::string& flag,
                                                  const std::string& bind) {
  const size_t colon = bind.rfind(':');
  if (colon == std::string::npos) return Error{flag + " " + bind + ": expected HOST:PORT"};
  std::string host = bind.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "0.0.0.0";
  long long port = 0;
  try {
    size_t used = 0;
    port = std::stoll(bind.substr(colon + 1), &used);
    if (used != bind.size() - colon - 1) port = -1;
  } catch (const std::exception&) {
    port = -1;
  }
  if (port < 0 || port > 65535) return Error{flag + " " + bind + ": bad port"};
  return std::make_pair(host, static_cast<int>(port));
}

// One handler shape for the four POST verbs: an empty body is a 400, anything else is the
// service's answer (which carries its own errors).
template <class Fn>
void Post(httplib::Server& server, const char* path, Fn fn) {
  server.Post(path, [fn](const httplib::Request& req, httplib::Response& res) {
    if (req.body.empty()) {
      res.status = 400;
      res.set_content("Please send a request body", "text/plain");
      return;
    }
    res.set_content(fn(req.body), kJson);
  });
}

// The page and its state take no query: anything there is refused rather than ignored.
bool RefuseQuery(const httplib::Request& req, httplib::Response& res) {
  if (req.params.empty()) return false;
  res.status = 400;
  res.set_content("unexpected query parameter \"" + req.params.begin()->first +
                      "\" (this page takes none; search is in the page)\n",
                  "text/plain");
  return true;
}

// Everything but /metrics: the extender's verbs, the webhook, health and readiness, explain and
// the web view.
void AddExtenderRoutes(httplib::Server& server, scheduler::ExtenderService& svc) {
  server.Get("/ui", [](const httplib::Request& req, httplib::Response& res) {
    if (RefuseQuery(req, res)) return;
    res.set_content(UiPageHtml(), "text/html; charset=utf-8");
  });
  server.Get("/ui/state", [&svc](const httplib::Request& req, httplib::Response& res) {
    if (RefuseQuery(req, res)) return;
    const auto state = svc.UiState();
    // The page polls; an unchanged state costs a 304 and no body.
    res.set_header("Cache-Control", "no-cache");
    res.set_header("ETag", state.etag);
    if (req.get_header_value("If-None-Match") == state.etag) {
      res.status = 304;
      return;
    }
    res.set_content(*state.json, kJson);
  });
  Post(server, "/filter", [&svc](const std::string& b) { return svc.Filter(b); });
  Post(server, "/bind", [&svc](const std::string& b) { return svc.Bind(b); });
  Post(server, "/prioritize", [&svc](const std::string& b) { return svc.Prioritize(b); });
  Post(server, "/webhook", [&svc](const std::string& b) { return svc.Webhook(b); });
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain");
  });
  server.Get("/readyz", [&svc](const httplib::Request&, httplib::Response& res) {
    std::string why;
    if (svc.Ready(&why)) {
      res.set_content("ok", "text/plain");
    } else {
      res.status = 503;
      res.set_content(why, "text/plain");
    }
  });
  // Only `pod` and `format` are read; anything else in the query is refused, not ignored.
  server.Get("/explain", [&svc](const httplib::Request& req, httplib::Response& res) {
    for (const auto& [name, value] : req.params) {
      if (name != "pod" && name != "format" && name != "node") {
        res.status = 400;
        res.set_content("unknown query parameter \"" + name + "\" (expected pod, format, node)\n",
                        "text/plain");
        return;
      }
    }
    if (req.get_param_value_count("pod") != 1 || req.get_param_value_count("format") > 1 ||
        req.get_param_value_count("node") > 1) {
      res.status = 400;
      res.set_content(
          "expected one pod=NAMESPACE/NAME, at most one format=text|json and one node=NAME\n",
          "text/plain");
      return;
    }
    const std::string node = req.has_param("node") ? req.get_param_value("node") : "";
    if (node.size() > 253 || node.find_first_of(" /\t\n") != std::string::npos) {
      res.status = 400;
      res.set_content("node: not a node name\n", "text/plain");
      return;
    }
    const std::string format = req.has_param("format") ? req.get_param_value("format") : "text";
    if (format != "text" && format != "json") {
      res.status = 400;
      res.set_content("format: expected text or json, got \"" + format + "\"\n", "text/plain");
      return;
    }
    auto answer = svc.Explain(req.get_param_value("pod"), format == "json", node);
    res.status = answer.status;
    res.set_content(answer.body, answer.content_type);
  });
}

}  // namespace

HttpServer::HttpServer(scheduler::ExtenderService& service, HttpOptions options)
    : impl_(std::make_unique<Impl>()), service_(service), options_(std::move(options)) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Listen() {
  auto hp = SplitHostPort(options_.flag, options_.bind);
  if (!hp.ok()) return Error{hp.error().message};
  const bool tls =
      !options_.metrics_only && (!options_.tls_cert_file.empty() || !options_.tls_key_file.empty());
  if (tls) {
    if (options_.tls_cert_file.empty() || options_.tls_key_file.empty()) {
      return Error{"TLS needs both --tls-cert-file and --tls-key-file"};
    }
    impl_->tls = std::make_unique<TlsReloader>(options_.tls_cert_file, options_.tls_key_file);
    if (Status s = impl_->tls->Load(); !s.ok()) return s;
    TlsReloader* reloader = impl_->tls.get();
    impl_->server = std::make_unique<httplib::SSLServer>([reloader](SSL_CTX& ctx) {
      SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
      reloader->Install(&ctx);
      return true;
    });
  } else {
    impl_->server = std::make_unique<httplib::Server>();
  }
  httplib::Server& server = *impl_->server;
  const int threads = options_.threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // Small JSON answers must not wait for Nagle's algorithm and the peer's delayed ACK.
  server.set_tcp_nodelay(true);
  // SO_REUSEADDR only: cpp-httplib's default also sets SO_REUSEPORT, with which a second
  // `tessera serve` on the same address starts and takes half the requests with its own state.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server.set_payload_max_length(options_.max_request_bytes);
  server.set_read_timeout(options_.read_timeout_seconds, 0);
  server.set_write_timeout(options_.write_timeout_seconds, 0);
  scheduler::ExtenderService& svc = service_;
  if (!options_.metrics_only) AddExtenderRoutes(server, svc);
  const bool legacy = options_.legacy_metrics;
  server.Get("/metrics", [&svc, legacy](const httplib::Request&, httplib::Response& res) {
    std::vector<prometheus::MetricFamily> usage;
    usage = svc.StateFamilies();
    if (legacy) {
      auto old_names = scheduler::LegacyGpuUsageFamilies(usage);
      usage.insert(usage.end(), old_names.begin(), old_names.end());
    }
    res.set_content(svc.metrics().Render(usage), "text/plain; version=0.0.4");
  });
  server.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, const std::exception_ptr& ep) {
        std::string what = "unknown error";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        spdlog::error("{} {}: {}", req.method, req.path, what);
        // The details stay in the log: a client learns nothing of the process's internals.
        res.status = 500;
        res.set_content("internal error\n", "text/plain");
      });
  const auto& [host, port] = hp.value();
  if (port == 0) {
    port_ = server.bind_to_any_port(host);
    if (port_ < 0) return Error{options_.flag + " " + options_.bind + ": cannot listen"};
  } else {
    if (!server.bind_to_port(host, port)) {
      return Error{options_.flag + " " + options_.bind + ": cannot listen (address in use?)"};
    }
    port_ = port;
  }
  return Status::Ok();
}

void HttpServer::Serve() {
  if (impl_->server) impl_->server->listen_after_bind();
}

uint64_t HttpServer::tls_reloads() const { return impl_->tls ? impl_->tls->reloads() : 0; }

void HttpServer::Stop() {
  if (impl_ && impl_->server) impl_->server->stop();
}

}  // namespace tessera::scheduler_runtime
