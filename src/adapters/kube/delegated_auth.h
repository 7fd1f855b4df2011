#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "adapters/kube/client.h"

// Delegated authentication and authorisation of HTTP requests, as kube-scheduler's secure port
// and kube-rbac-proxy do it: the bearer token is checked with a TokenReview, then the user's
// access to the non-resource URL with a SubjectAccessReview, both asked of the API server.
namespace tessera::kube {

struct DelegatedAuthOptions {
  // k8s.io/apiserver's delegating authentication and authorisation cache their answers for 10 s
  // (allowed and denied alike); the same here, so a revoked binding takes effect as quickly.
  std::chrono::seconds allowed_ttl{10};
  std::chrono::seconds denied_ttl{10};
  size_t max_cache_entries = 4096;  // oldest dropped first; 0 = no cache
  // TokenReview spec.audiences; empty = the API server's own audiences.
  std::vector<std::string> audiences;
};

struct AccessDecision {
  // 200 allowed, 401 no or invalid token, 403 authenticated but not allowed, 503 the API server
  // could not be asked or gave an answer that could not be read.
  int status = 0;
  std::string user;    // the authenticated user name when known
  std::string reason;  // for the response body and the log; never contains the token
};

inline std::chrono::steady_clock::time_point SteadyClockNow() {
  return std::chrono::steady_clock::now();
}

// Thread-safe: any number of threads may call Check concurrently. The API server is asked
// outside the cache's lock, so a slow review never blocks cached answers.
class DelegatedAuthorizer {
 public:
  using NowFunction = std::function<std::chrono::steady_clock::time_point()>;

  DelegatedAuthorizer(Client& client, DelegatedAuthOptions options = {},
                      NowFunction now = SteadyClockNow);

  // `authorization_header`: the request's Authorization header value ("Bearer TOKEN");
  // `path`: the URL path without the query; `verb`: "get", "post", ... lower-case, as in
  // SubjectAccessReview spec.nonResourceAttributes.
  AccessDecision Check(std::string_view authorization_header, std::string_view path,
                       std::string_view verb);

  size_t cache_entries() const;

 private:
  struct CachedDecision {
    AccessDecision decision;
    std::chrono::steady_clock::time_point expires_at;
    std::list<std::string>::iterator age_position;  // in insertion_order_
  };

  // The cache key: SHA-256 of the token, the path and the verb; never the token itself.
  static std::string CacheKey(std::string_view token, std::string_view path, std::string_view verb);
  bool Lookup(const std::string& key, AccessDecision* decision);
  void Store(const std::string& key, const AccessDecision& decision);
  AccessDecision AskApiServer(const std::string& token, std::string_view path,
                              std::string_view verb);

  Client& client_;
  const DelegatedAuthOptions options_;
  const NowFunction now_;

  mutable std::mutex mu_;
  std::unordered_map<std::string, CachedDecision> cache_;  // guarded by mu_
  std::list<std::string> insertion_order_;                 // oldest first; guarded by mu_
};

}  // namespace tessera::kube
