#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "adapters/kube/client_options.h"
#include "adapters/kube/config.h"
#include "adapters/kube/response.h"

namespace tessera::kube {

struct ApiRequest {
  std::string method;  // "GET", "POST", "PUT", "PATCH", "DELETE"
  std::string path;    // "/api/v1/pods?limit=500", relative to the server URL
  std::string body;
  std::string content_type;  // for the body
};

// A Kubernetes API client: JSON over HTTP(S) with the configured credentials and the retry
// policy of ClientOptions. Thread-safe: any number of threads may call concurrently.
class Client {
 public:
  explicit Client(ClusterConfig config, ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  Response Get(const std::string& path);
  Response Post(const std::string& path, const std::string& json_body);
  Response Put(const std::string& path, const std::string& json_body);
  Response Patch(const std::string& path, const std::string& body,
                 const std::string& content_type = "application/merge-patch+json");
  Response Delete(const std::string& path);

  // Any request, with retries. `should_stop` (may be empty) is polled at least every 100 ms,
  // during the transfer and between retries; true abandons the request (Response::cancelled).
  Response Send(const ApiRequest& request, const std::function<bool()>& should_stop = {});

  // A streaming GET (a watch): on_line gets each complete newline-terminated line as it arrives
  // (without the newline); returning false ends the stream. should_stop is polled at least every
  // 100 ms. Returns the status, and the body when it is not 200. Never retried.
  Response Stream(const std::string& path,
                  const std::function<bool(std::string_view line)>& on_line,
                  const std::function<bool()>& should_stop);

  const ClusterConfig& config() const;
  const ClientOptions& options() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::kube
