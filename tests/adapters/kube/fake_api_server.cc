#include "fake_api_server.h"

#include <chrono>

#include "core/common/strings.h"

namespace tessera::kube::testing {
namespace {

constexpr size_t kServerThreads = 24;  // hanging watches each hold one
constexpr auto kMaxHang = std::chrono::seconds(60);

}  // namespace

std::string RecordedRequest::Param(const std::string& key) const {
  auto it = params.find(key);
  return it == params.end() ? "" : it->second;
}

std::string RecordedRequest::Header(const std::string& name) const {
  auto it = headers.find(ToLower(name));
  return it == headers.end() ? "" : it->second;
}

Json RecordedRequest::JsonBody() const { return Json::parse(body, nullptr, false); }

FakeApiServer::FakeApiServer() : server_(std::make_unique<httplib::Server>()) { Start(); }

FakeApiServer::FakeApiServer(const TlsFiles& tls)
    : server_(std::make_unique<httplib::SSLServer>(
          tls.cert_file.c_str(), tls.key_file.c_str(),
          tls.client_ca_file.empty() ? nullptr : tls.client_ca_file.c_str())),
      tls_(true) {
  Start();
}

void FakeApiServer::Start() {
  if (!server_->is_valid()) return;
  server_->new_task_queue = [] { return new httplib::ThreadPool(kServerThreads); };
  const auto dispatch = [this](const httplib::Request& request, httplib::Response& response) {
    Dispatch(request, response);
  };
  server_->Get(".*", dispatch);
  server_->Post(".*", dispatch);
  server_->Put(".*", dispatch);
  server_->Patch(".*", dispatch);
  server_->Delete(".*", dispatch);
  const int port = server_->bind_to_any_port("127.0.0.1");
  if (port <= 0) return;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() is ignored until the accept loop runs, so wait for it.
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  port_ = port;
}

FakeApiServer::~FakeApiServer() {
  stopping_.store(true);
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string FakeApiServer::url() const {
  return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

void FakeApiServer::On(const std::string& method, const std::string& path, Handler handler) {
  std::lock_guard<std::mutex> lock(mu_);
  handlers_[{method, path}] = std::move(handler);
}

std::vector<RecordedRequest> FakeApiServer::Requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

std::vector<RecordedRequest> FakeApiServer::Requests(const std::string& method,
                                                     const std::string& path) const {
  std::vector<RecordedRequest> matching;
  for (RecordedRequest& r : Requests()) {
    if (r.method == method && r.path == path) matching.push_back(std::move(r));
  }
  return matching;
}

size_t FakeApiServer::Count(const std::string& method, const std::string& path) const {
  return Requests(method, path).size();
}

void FakeApiServer::Dispatch(const httplib::Request& request, httplib::Response& response) {
  RecordedRequest recorded;
  recorded.method = request.method;
  recorded.path = request.path;
  recorded.body = request.body;
  recorded.remote_port = request.remote_port;
  for (const auto& [key, value] : request.params) recorded.params.emplace(key, value);
  for (const auto& [name, value] : request.headers) recorded.headers[ToLower(name)] = value;
  Handler handler;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(recorded);
    auto it = handlers_.find({request.method, request.path});
    if (it != handlers_.end()) handler = it->second;
  }
  if (handler) {
    handler(recorded, response);
  } else {
    ReplyJson(response, 404, StatusBody(404, "NotFound", request.path + " not found"));
  }
}

void FakeApiServer::Stream(httplib::Response& response, std::vector<std::string> chunks,
                           bool hang) {
  auto pending = std::make_shared<std::vector<std::string>>(std::move(chunks));
  response.set_chunked_content_provider(
      "application/json", [this, pending, hang](size_t /*offset*/, httplib::DataSink& sink) {
        for (const std::string& chunk : *pending) {
          if (!sink.write(chunk.data(), chunk.size())) return false;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));  // separate TCP segments
        }
        if (hang) {
          const auto until = std::chrono::steady_clock::now() + kMaxHang;
          while (!stopping_.load() && std::chrono::steady_clock::now() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          }
          return false;  // drops the connection without ending the body
        }
        sink.done();
        return true;
      });
}

ClusterConfig ConfigFor(const FakeApiServer& server) {
  ClusterConfig config;
  config.server = server.url();
  return config;
}

ClientOptions FastRetryOptions() {
  ClientOptions options;
  options.retry_backoff_initial = std::chrono::milliseconds(1);
  options.retry_backoff_max = std::chrono::milliseconds(5);
  options.retry_after_max = std::chrono::milliseconds(5);
  options.request_timeout = std::chrono::milliseconds(20000);
  return options;
}

void ReplyJson(httplib::Response& response, int status, const Json& body) {
  response.status = status;
  response.set_content(ToJsonText(body), "application/json");
}

Json StatusBody(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
          {"reason", reason}, {"message", message}, {"code", code}};
}

std::string WatchLine(const std::string& type, const Json& object) {
  return ToJsonText(Json{{"type", type}, {"object", object}}) + "\n";
}

Json ObjectNamed(const std::string& name, const std::string& rv) {
  return {{"metadata", {{"name", name}, {"resourceVersion", rv}}}};
}

}  // namespace tessera::kube::testing
