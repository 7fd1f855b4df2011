#include "adapters/kube/curl_transport.h"

#include <curl/curl.h>

#include <utility>

#include "core/common/strings.h"

namespace tessera::kube {
namespace {

// At least as many as transfers run at once (serve: 32 bind workers, 8 verb workers, the
// watches, the event sender): a handle dropped on release closes its connection, and the next
// transfer pays a new TCP and TLS handshake (building the TLS context and decoding the keys took
// 4 % of serve's CPU in a burst of binds while this was 16).
constexpr size_t kMaxIdleHandles = 64;
constexpr int kStopPollMillis = 100;

void EnsureCurlInitialized() {
  // curl_global_init is not thread-safe; a function-local static runs it exactly once.
  static const CURLcode kInit = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)kInit;
}

// curl_slist with an owner.
class HeaderList {
 public:
  HeaderList() = default;
  HeaderList(const HeaderList&) = delete;
  HeaderList& operator=(const HeaderList&) = delete;
  ~HeaderList() { curl_slist_free_all(list_); }
  void Add(const std::string& line) {
    if (curl_slist* grown = curl_slist_append(list_, line.c_str()); grown != nullptr) {
      list_ = grown;
    }
  }
  curl_slist* get() const { return list_; }

 private:
  curl_slist* list_ = nullptr;
};

// What the callbacks of one transfer write to.
struct TransferState {
  CURL* easy = nullptr;
  const TransferRequest* request = nullptr;
  Response* response = nullptr;
  bool ended_by_receiver = false;
};

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* state = static_cast<TransferState*>(user);
  const std::string_view line(data, size * count);
  if (StartsWith(line, "HTTP/")) {
    state->response->headers.clear();  // a new response begins (after 100 Continue)
  } else if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    state->response->headers[ToLower(Trim(line.substr(0, colon)))] = Trim(line.substr(colon + 1));
  }
  return size * count;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* state = static_cast<TransferState*>(user);
  const std::string_view chunk(data, size * count);
  if (!state->request->on_body) {
    state->response->body.append(chunk);
    return chunk.size();
  }
  long status = 0;
  curl_easy_getinfo(state->easy, CURLINFO_RESPONSE_CODE, &status);
  if (!state->request->on_body(chunk, status)) {
    state->ended_by_receiver = true;
    return 0;  // makes curl end the transfer with CURLE_WRITE_ERROR
  }
  return chunk.size();
}

bool IsPermanent(CURLcode code) {
  switch (code) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
      return true;
    default:
      return false;
  }
}

void SetBlob(CURL* easy, CURLoption option, const std::string& pem) {
  curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  curl_easy_setopt(easy, option, &blob);
}

}  // namespace

struct CurlTransport::Handles {
  CURL* easy = curl_easy_init();
  // A multi handle per easy handle lets a transfer be polled for cancellation every 100 ms;
  // curl_easy_perform would only look about once a second. The connection cache lives here.
  CURLM* multi = curl_multi_init();
  Handles() = default;
  Handles(const Handles&) = delete;
  Handles& operator=(const Handles&) = delete;
  ~Handles() {
    curl_easy_cleanup(easy);
    curl_multi_cleanup(multi);
  }
};

CurlTransport::CurlTransport(ConnectionSettings settings) : settings_(std::move(settings)) {
  EnsureCurlInitialized();
}

CurlTransport::~CurlTransport() = default;

std::unique_ptr<CurlTransport::Handles> CurlTransport::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<Handles> handles = std::move(idle_.back());
      idle_.pop_back();
      return handles;
    }
  }
  return std::make_unique<Handles>();
}

void CurlTransport::Release(std::unique_ptr<Handles> handles) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < kMaxIdleHandles) idle_.push_back(std::move(handles));
}

TransferOutcome CurlTransport::Perform(const TransferRequest& request) {
  TransferOutcome outcome;
  std::unique_ptr<Handles> handles = Acquire();
  if (handles->easy == nullptr || handles->multi == nullptr) {
    outcome.response.transport_error = "curl: cannot create a handle";
    return outcome;
  }
  CURL* easy = handles->easy;
  curl_easy_reset(easy);  // keeps the connection and TLS session caches

  TransferState state{easy, &request, &outcome.response};
  char error_buffer[CURL_ERROR_SIZE] = {};
  HeaderList headers;
  for (const std::string& h : request.headers) headers.Add(h);
  headers.Add("Expect:");  // no 100-continue round trip before bodies
  HeaderList connect_to;
  if (!settings_.connect_to.empty()) connect_to.Add(settings_.connect_to);

  curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(easy, CURLOPT_USERAGENT, settings_.user_agent.c_str());
  // Compressed streams would hold watch events back in the server's compressor.
  if (!request.on_body) curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "gzip");
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(settings_.connect_timeout.count()));
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(request.total_timeout.count()));
  // Watches can be idle for minutes: keepalive notices a peer that vanished.
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPIDLE, 30L);
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPINTVL, 10L);
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, &state);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &state);
  if (connect_to.get() != nullptr) curl_easy_setopt(easy, CURLOPT_CONNECT_TO, connect_to.get());

  if (!settings_.ca_pem.empty()) SetBlob(easy, CURLOPT_CAINFO_BLOB, settings_.ca_pem);
  if (!settings_.client_cert_pem.empty()) {
    SetBlob(easy, CURLOPT_SSLCERT_BLOB, settings_.client_cert_pem);
    curl_easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
    SetBlob(easy, CURLOPT_SSLKEY_BLOB, settings_.client_key_pem);
    curl_easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
  }
  if (settings_.insecure_skip_tls_verify) {
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
  }

  if (request.method == "GET") {
    curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    if (!request.body.empty() || request.method != "DELETE") {
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request.body.data());
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
    }
  }

  CURLM* multi = handles->multi;
  curl_multi_add_handle(multi, easy);
  CURLcode result = CURLE_OK;
  std::string multi_error;
  for (;;) {
    int running = 0;
    if (CURLMcode mc = curl_multi_perform(multi, &running); mc != CURLM_OK) {
      multi_error = curl_multi_strerror(mc);
      break;
    }
    if (running == 0) {
      int queued = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
        if (msg->msg == CURLMSG_DONE) result = msg->data.result;
      }
      break;
    }
    if (request.should_stop && request.should_stop()) {
      outcome.response.cancelled = true;
      break;
    }
    if (CURLMcode mc = curl_multi_poll(multi, nullptr, 0, kStopPollMillis, nullptr);
        mc != CURLM_OK) {
      multi_error = curl_multi_strerror(mc);
      break;
    }
  }

  long status = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  long request_size = 0;
  curl_easy_getinfo(easy, CURLINFO_REQUEST_SIZE, &request_size);
  curl_multi_remove_handle(multi, easy);
  curl_easy_reset(easy);  // drops the pointers to this frame's buffers and lists
  Release(std::move(handles));

  Response& response = outcome.response;
  outcome.request_sent = request_size > 0;
  outcome.ended_by_receiver = state.ended_by_receiver;
  response.status = status;
  if (!multi_error.empty()) {
    response.transport_error = "curl: " + multi_error;
  } else if (result != CURLE_OK && !state.ended_by_receiver && !response.cancelled) {
    response.transport_error = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(result);
    outcome.permanent_failure = IsPermanent(result);
  }
  // A body cut short is no answer, unless the receiver consumes a stream as it comes.
  if (!request.on_body && (!response.transport_error.empty() || response.cancelled)) {
    response.status = 0;
  }
  return outcome;
}

}  // namespace tessera::kube
