#include "adapters/kube/client.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "adapters/kube/curl_transport.h"
#include "adapters/kube/retry_policy.h"
#include "adapters/kube/token_bucket.h"
#include "adapters/kube/token_source.h"
#include "adapters/kube/url.h"

namespace tessera::kube {
namespace {

constexpr size_t kMaxStreamLine = size_t{64} << 20;  // far above any object etcd accepts
constexpr size_t kMaxErrorBody = size_t{1} << 20;
constexpr std::chrono::milliseconds kStopPoll{50};

// Sleeps `delay` in short slices; false when should_stop became true first.
bool SleepUnlessStopped(std::chrono::milliseconds delay, const std::function<bool()>& should_stop) {
  const auto deadline = std::chrono::steady_clock::now() + delay;
  for (;;) {
    if (should_stop && should_stop()) return false;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return true;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(deadline - now, kStopPoll));
  }
}

}  // namespace

class Client::Impl {
 public:
  Impl(ClusterConfig config, ClientOptions options)
      : config_(std::move(config)),
        options_(std::move(options)),
        tokens_(config_.bearer_token, config_.token_file, options_.token_refresh_interval),
        transport_(MakeSettings()) {
    if (options_.qps > 0) {
      limiter_.emplace(options_.qps, static_cast<double>(options_.burst),
                       TokenBucket::Clock::now());
    }
  }

  Response Send(const ApiRequest& request, const std::function<bool()>& should_stop) {
    bool token_refreshed = false;
    for (int retry = 0;;) {
      if (!Throttle(should_stop)) return Cancelled();
      const std::string token = tokens_.Current();
      TransferRequest transfer = MakeTransfer(request, token);
      transfer.total_timeout = options_.request_timeout;
      transfer.should_stop = should_stop;
      TransferOutcome outcome = Perform(transfer);
      // A rejected token had no effect on the server, so any verb may be repeated once.
      if (outcome.response.status == 401 && !token_refreshed &&
          tokens_.RefreshAfterUnauthorized(token)) {
        token_refreshed = true;
        continue;
      }
      if (retry >= options_.max_retries || !IsRetryable(request.method, outcome)) {
        return std::move(outcome.response);
      }
      if (!SleepUnlessStopped(RetryDelay(outcome.response, retry, options_), should_stop)) {
        return std::move(outcome.response);
      }
      ++retry;
    }
  }

  Response Stream(const std::string& path,
                  const std::function<bool(std::string_view line)>& on_line,
                  const std::function<bool()>& should_stop) {
    if (!Throttle(should_stop)) return Cancelled();
    std::string pending;  // bytes after the last newline
    size_t scanned = 0;   // bytes of `pending` known to hold no newline
    std::string error_body;
    bool line_too_long = false;
    const std::string token = tokens_.Current();
    TransferRequest transfer = MakeTransfer({"GET", path, "", ""}, token);
    transfer.should_stop = should_stop;
    transfer.on_body = [&](std::string_view chunk, long status) {
      if (status != 200) {
        error_body.append(
            chunk.substr(0, kMaxErrorBody - std::min(kMaxErrorBody, error_body.size())));
        return true;
      }
      pending.append(chunk);
      size_t start = 0;
      for (size_t nl = pending.find('\n', scanned); nl != std::string::npos;
           nl = pending.find('\n', start)) {
        std::string_view line(pending.data() + start, nl - start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        start = nl + 1;
        if (!on_line(line)) return false;
      }
      pending.erase(0, start);
      scanned = pending.size();
      if (pending.size() > kMaxStreamLine) {
        line_too_long = true;
        return false;
      }
      return true;
    };
    TransferOutcome outcome = Perform(transfer);
    // The caller rewatches; the next stream then carries the re-read token.
    if (outcome.response.status == 401) tokens_.RefreshAfterUnauthorized(token);
    Response response = std::move(outcome.response);
    if (line_too_long) {
      response.transport_error = "stream line longer than " + std::to_string(kMaxStreamLine);
    }
    if (response.status != 200) response.body = std::move(error_body);
    return response;
  }

  const ClusterConfig& config() const { return config_; }
  const ClientOptions& options() const { return options_; }

 private:
  // Waits for a token of the rate limit (none without one); false when should_stop came first.
  bool Throttle(const std::function<bool()>& should_stop) {
    if (!limiter_) return true;
    for (;;) {
      TokenBucket::Clock::duration wait;
      {
        std::lock_guard<std::mutex> lock(limiter_mu_);
        wait = limiter_->TryTake(TokenBucket::Clock::now());
      }
      if (wait == TokenBucket::Clock::duration::zero()) return true;
      if (!SleepUnlessStopped(std::chrono::ceil<std::chrono::milliseconds>(wait), should_stop)) {
        return false;
      }
    }
  }

  static Response Cancelled() {
    Response response;
    response.cancelled = true;
    response.transport_error = "cancelled while waiting for the client rate limit";
    return response;
  }

  ConnectionSettings MakeSettings() {
    ConnectionSettings settings;
    settings.ca_pem = config_.ca_pem;
    settings.insecure_skip_tls_verify = config_.insecure_skip_tls_verify;
    settings.client_cert_pem = config_.client_cert_pem;
    settings.client_key_pem = config_.client_key_pem;
    settings.user_agent = options_.user_agent;
    settings.connect_timeout = options_.connect_timeout;
    base_url_ = config_.server;
    while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
    if (!config_.tls_server_name.empty()) {
      // curl verifies (and sends as SNI) the URL's host name, so the URL names the TLS server
      // name and CONNECT_TO sends the connection to the real host.
      auto url = ParseServerUrl(config_.server);
      if (!url.ok()) {
        config_error_ = url.error().message;
      } else {
        base_url_ =
            url->scheme + "://" + config_.tls_server_name + ":" + url->port + url->path_prefix;
        settings.connect_to =
            config_.tls_server_name + ":" + url->port + ":" + url->host + ":" + url->port;
      }
    }
    return settings;
  }

  TransferRequest MakeTransfer(const ApiRequest& request, const std::string& token) const {
    TransferRequest transfer;
    transfer.method = request.method;
    transfer.url = base_url_ + (request.path.starts_with('/') ? "" : "/") + request.path;
    transfer.headers.emplace_back("Accept: application/json");
    if (!token.empty()) transfer.headers.push_back("Authorization: Bearer " + token);
    if (!request.content_type.empty()) {
      transfer.headers.push_back("Content-Type: " + request.content_type);
    }
    transfer.body = request.body;
    return transfer;
  }

  TransferOutcome Perform(const TransferRequest& transfer) {
    if (!config_error_.empty()) {
      TransferOutcome outcome;
      outcome.response.transport_error = config_error_;
      outcome.permanent_failure = true;
      return outcome;
    }
    return transport_.Perform(transfer);
  }

  ClusterConfig config_;
  ClientOptions options_;
  TokenSource tokens_;
  std::string base_url_;
  std::string config_error_;  // a server URL that cannot be used
  std::mutex limiter_mu_;
  std::optional<TokenBucket> limiter_;  // ClientOptions::qps > 0
  CurlTransport transport_;  // last: MakeSettings fills base_url_ and config_error_ first
};

Client::Client(ClusterConfig config, ClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(options))) {}

Client::~Client() = default;

Response Client::Get(const std::string& path) { return Send({"GET", path, "", ""}); }

Response Client::Post(const std::string& path, const std::string& json_body) {
  return Send({"POST", path, json_body, "application/json"});
}

Response Client::Put(const std::string& path, const std::string& json_body) {
  return Send({"PUT", path, json_body, "application/json"});
}

Response Client::Patch(const std::string& path, const std::string& body,
                       const std::string& content_type) {
  return Send({"PATCH", path, body, content_type});
}

Response Client::Delete(const std::string& path) { return Send({"DELETE", path, "", ""}); }

Response Client::Send(const ApiRequest& request, const std::function<bool()>& should_stop) {
  return impl_->Send(request, should_stop);
}

Response Client::Stream(const std::string& path,
                        const std::function<bool(std::string_view line)>& on_line,
                        const std::function<bool()>& should_stop) {
  return impl_->Stream(path, on_line, should_stop);
}

const ClusterConfig& Client::config() const { return impl_->config(); }
const ClientOptions& Client::options() const { return impl_->options(); }

}  // namespace tessera::kube
