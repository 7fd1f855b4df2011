#pragma once

#include <memory>

#include "app/serve_command.h"
#include "core/common/result.h"
#include "scheduler/scheduler_service.h"
#include "scheduler_runtime/http_server.h"

namespace tessera::kube {
class Client;
class DelegatedAuthorizer;
}  // namespace tessera::kube

namespace tessera::app {

// The listeners of `tessera serve`, split by who may call them (docs/security.md):
// - main (--http-bind): the webhook, probes, and /metrics, /ui/state, /explain behind delegated
//   authentication; the extender verbs too unless --extender-bind moves them, answered only for
//   callers on this host or with a client certificate --extender-client-ca signed;
// - extender (--extender-bind): the extender verbs alone;
// - metrics (--metrics-bind-address): /metrics alone, plain HTTP, behind the same read check.
struct Listeners {
  std::unique_ptr<kube::DelegatedAuthorizer> authorizer;  // --read-auth=delegated
  std::unique_ptr<scheduler_runtime::HttpServer> http;
  std::unique_ptr<scheduler_runtime::HttpServer> extender;
  std::unique_ptr<scheduler_runtime::HttpServer> metrics;

  Listeners();
  ~Listeners();
  Listeners(Listeners&&) noexcept;
  Listeners& operator=(Listeners&&) noexcept;
};

// `api`: the API server's client when there is one (not with --cluster); it answers the
// delegated read checks and must outlive the listeners. Errors name the flag.
Result<Listeners> OpenListeners(const ServeOptions& options, scheduler::SchedulerService& service,
                                kube::Client* api);

// Logged once the cluster is loaded or watched: a client waiting for this line may send requests.
void LogListening(const ServeOptions& options, const Listeners& listeners);

// True for an address only this host can reach (127.0.0.0/8, ::1, localhost).
bool IsLoopbackBind(const std::string& bind);

}  // namespace tessera::app
