#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/kube/response.h"

namespace tessera::kube {

// How every transfer of one client connects.
struct ConnectionSettings {
  std::string ca_pem;  // empty: the system's CAs
  bool insecure_skip_tls_verify = false;
  std::string client_cert_pem, client_key_pem;
  // curl's CONNECT_TO entry ("name:443:10.0.0.1:6443") when the URL names the TLS server name
  // rather than the host to connect to.
  std::string connect_to;
  std::string user_agent;
  std::chrono::milliseconds connect_timeout{5000};
};

struct TransferRequest {
  std::string method;  // "GET", "POST", ...
  std::string url;
  std::vector<std::string> headers;            // "Name: value"
  std::string body;                            // sent for every method but GET
  std::chrono::milliseconds total_timeout{0};  // 0: none (streams)
  // Gets the body as it arrives, with the HTTP status; returning false ends the transfer.
  // Empty: the body is collected into Response::body.
  std::function<bool(std::string_view chunk, long status)> on_body;
  // Polled at least every 100 ms; true cancels the transfer. May be empty.
  std::function<bool()> should_stop;
};

struct TransferOutcome {
  Response response;
  bool request_sent = false;       // some of the request reached the network
  bool permanent_failure = false;  // TLS verification or a bad URL: repeating cannot help
  bool ended_by_receiver = false;  // on_body returned false
};

// Runs HTTP transfers with libcurl. Handles are pooled so that connections and TLS sessions are
// reused across requests. Thread-safe: each transfer uses its own handles.
class CurlTransport {
 public:
  explicit CurlTransport(ConnectionSettings settings);
  ~CurlTransport();
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  TransferOutcome Perform(const TransferRequest& request);

 private:
  struct Handles;
  std::unique_ptr<Handles> Acquire();
  void Release(std::unique_ptr<Handles> handles);

  const ConnectionSettings settings_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Handles>> idle_;
};

}  // namespace tessera::kube
