#pragma once

#include <httplib.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "adapters/kube/client.h"
#include "adapters/kube/json_text.h"

// A scripted stand-in for the Kubernetes API server: tests register a handler per method and
// path and read back every request it received.
namespace tessera::kube::testing {

struct RecordedRequest {
  std::string method, path, body;
  std::multimap<std::string, std::string> params;  // decoded query parameters
  std::map<std::string, std::string> headers;      // lower-case names
  int remote_port = 0;                             // the client's end: one per connection

  std::string Param(const std::string& key) const;  // "" when absent
  bool HasParam(const std::string& key) const { return params.count(key) > 0; }
  std::string Header(const std::string& name) const;  // "" when absent
  Json JsonBody() const;                              // discarded JSON when the body is not JSON
};

class FakeApiServer {
 public:
  using Handler = std::function<void(const RecordedRequest& request, httplib::Response& response)>;
  struct TlsFiles {
    std::string cert_file, key_file;
    std::string client_ca_file;  // when set, clients must present a certificate it signed
  };

  FakeApiServer();  // plain HTTP
  explicit FakeApiServer(const TlsFiles& tls);
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  bool running() const { return port_ > 0; }
  int port() const { return port_; }
  std::string url() const;  // "http://127.0.0.1:PORT" or https

  // Replaces the handler for `method` and exact `path` (query excluded). Unhandled requests
  // get a 404 Status. Handlers run on the server's threads, outside its lock.
  void On(const std::string& method, const std::string& path, Handler handler);

  std::vector<RecordedRequest> Requests() const;
  std::vector<RecordedRequest> Requests(const std::string& method, const std::string& path) const;
  size_t Count(const std::string& method, const std::string& path) const;

  // Sends `chunks` as a chunked body (each chunk written as given), then ends the body, or with
  // `hang` keeps the connection open, sending nothing, until the server shuts down.
  void Stream(httplib::Response& response, std::vector<std::string> chunks, bool hang);

 private:
  void Start();
  void Dispatch(const httplib::Request& request, httplib::Response& response);

  std::unique_ptr<httplib::Server> server_;
  bool tls_ = false;
  int port_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Handler> handlers_;
  std::vector<RecordedRequest> requests_;
};

// A client configuration for the fake server (plain HTTP).
ClusterConfig ConfigFor(const FakeApiServer& server);
// Client options with short retry delays so that retry tests run fast.
ClientOptions FastRetryOptions();

// Sets a JSON body.
void ReplyJson(httplib::Response& response, int status, const Json& body);
// A metav1.Status error body.
Json StatusBody(int code, const std::string& reason, const std::string& message);
// One watch event line: {"type": type, "object": object}\n
std::string WatchLine(const std::string& type, const Json& object);
// {"metadata": {"name": name, "resourceVersion": rv}}
Json ObjectNamed(const std::string& name, const std::string& rv);

}  // namespace tessera::kube::testing
