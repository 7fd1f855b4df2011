#include "adapters/http/listener.h"

#include <malloc.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "adapters/http/query_string.h"
#include "adapters/http/tls_reloader.h"
#include "adapters/http/work_queue.h"

namespace tessera::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;

namespace {

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

bool IsLoopback(const net::ip::address& address) {
  if (address.is_loopback()) return true;
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return net::ip::make_address_v4(net::ip::v4_mapped, address.to_v6()).is_loopback();
  }
  return false;
}

bool EqualsIgnoringCase(beast::string_view a, beast::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

constexpr size_t kTrimAfterBodyBytes = 4u << 20;
constexpr size_t kBodyReadBytes = 64u << 10;

// A handler's exception is logged here and never reaches the client: it gets a plain 500.
Response RunHandler(const Route& route, const Request& request) {
  try {
    return route.handler(request);
  } catch (const std::exception& e) {
    spdlog::error("{} {}: {}", request.method, request.path, e.what());
  } catch (...) {
    spdlog::error("{} {}: unknown exception", request.method, request.path);
  }
  return Response::Text(500, "internal error\n");
}

}  // namespace

// A connection that can be closed from outside its own handlers (idle eviction). Its place in
// the listener's idle list is guarded by the listener's idle_mu.
class Connection {
 public:
  virtual ~Connection() = default;
  virtual void CloseFromOutside() = 0;

  bool idle = false;
  std::list<std::weak_ptr<Connection>>::iterator idle_entry;
};

struct Listener::Impl {
  ListenerOptions options;
  std::map<std::string, std::vector<Route>> routes;  // by path, one per method
  // Created in the constructor and destroyed explicitly last: pending handlers own sessions,
  // whose destructors still use the members below.
  std::unique_ptr<net::io_context> io = std::make_unique<net::io_context>();
  std::optional<ssl::context> tls_context;
  std::unique_ptr<TlsReloader> tls;
  std::optional<tcp::acceptor> acceptor;
  std::unique_ptr<WorkQueue> work;
  std::unique_ptr<WorkQueue> probes;
  std::unique_ptr<WorkQueue> open_work;
  std::unique_ptr<WorkQueue> bind_work;
  int port = 0;
  std::atomic<bool> stopped{false};

  std::atomic<size_t> open{0};
  std::atomic<size_t> buffered_body_bytes{0};
  std::atomic<size_t> large_bodies{0};
  std::mutex idle_mu;
  std::list<std::weak_ptr<Connection>> idle;  // oldest first

  std::atomic<uint64_t> accepted{0}, evicted{0}, refused{0}, requests{0}, deadline{0}, too_large{0},
      encoding{0}, malformed{0}, overloaded{0}, forbidden{0};

  void Accept();
  void OnAccept(beast::error_code ec, tcp::socket socket);
  // Frees a place for a new connection: closes the longest-idle one; false when none is idle.
  bool EvictIdle();
  const Route* FindRoute(const std::string& method, const std::string& path,
                         bool* path_known) const;
  // Takes `bytes` of the body budget; false when it is spent.
  bool ReserveBody(size_t bytes) {
    size_t now = buffered_body_bytes.load();
    do {
      if (now + bytes > options.limits.max_buffered_body_bytes) return false;
    } while (!buffered_body_bytes.compare_exchange_weak(now, now + bytes));
    return true;
  }
  // Takes one of the places for large bodies; false when all are taken.
  bool ReserveLargeBody() {
    size_t now = large_bodies.load();
    do {
      if (now >= options.limits.max_large_bodies) return false;
    } while (!large_bodies.compare_exchange_weak(now, now + 1));
    return true;
  }
};

namespace {

// One connection, plain or TLS: handshake, then requests one after another (keep-alive), each
// read under the deadline, gated, dispatched to its lane and answered.
template <class Stream>
class Session : public Connection, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  template <class... Args>
  Session(Listener::Impl& listener, bool peer_is_loopback, Args&&... stream_args)
      : listener_(listener),
        stream_(std::forward<Args>(stream_args)...),
        buffer_(listener.options.limits.max_header_bytes + (64u << 10)),
        peer_is_loopback_(peer_is_loopback) {}

  ~Session() override {
    ReleaseBody();
    LeaveIdle();
    listener_.open.fetch_sub(1);
  }

  void Start() {
    if constexpr (kTls) {
      Lowest().expires_after(listener_.options.limits.tls_handshake_deadline);
      handshake_started_ = std::chrono::steady_clock::now();
      stream_.async_handshake(
          ssl::stream_base::server,
          [self = this->shared_from_this()](beast::error_code ec) { self->OnHandshake(ec); });
    } else {
      WaitForRequest();
    }
  }

  void CloseFromOutside() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] {
      beast::error_code ignored;
      self->Lowest().socket().close(ignored);
    });
  }

 private:
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }
  const ListenerLimits& Limits() const { return listener_.options.limits; }

  void OnHandshake(beast::error_code ec) {
    if (ec) {
      // The TLS layer may report the cut under an error of its own: judge by the clock.
      if (ec == beast::error::timeout || std::chrono::steady_clock::now() - handshake_started_ >=
                                             Limits().tls_handshake_deadline) {
        listener_.deadline.fetch_add(1);
      }
      return;
    }
    if constexpr (kTls) {
      SSL* ssl = stream_.native_handle();
      client_certificate_verified_ =
          SSL_get0_peer_certificate(ssl) != nullptr && SSL_get_verify_result(ssl) == X509_V_OK;
    }
    WaitForRequest();
  }

  // Between requests the connection waits without a deadline of its own beyond the idle
  // timeout; the request deadline starts with the request's first byte.
  void WaitForRequest() {
    if (buffer_.size() > 0) {
      ReadHeader();
      return;
    }
    // An idle connection holds no buffer: the last request's is given back, and the wait reads
    // a single byte (thousands of idle keep-alive connections, each with a few KiB, add up).
    buffer_.shrink_to_fit();
    EnterIdle();
    Lowest().expires_after(Limits().idle_timeout);
    stream_.async_read_some(buffer_.prepare(1),
                            [self = this->shared_from_this()](beast::error_code ec, size_t bytes) {
                              self->LeaveIdle();
                              if (ec) return;  // closed, idle timeout or evicted: nothing was asked
                              self->buffer_.commit(bytes);
                              self->ReadHeader();
                            });
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(Limits().max_header_bytes));
    parser_->body_limit(static_cast<uint64_t>(Limits().max_body_bytes));
    Lowest().expires_after(Limits().request_deadline);
    bhttp::async_read_header(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  // Refuses what can be refused from the header alone, before the body costs memory.
  void OnHeader(beast::error_code ec) {
    if (ec) {
      ReadFailed(ec);
      return;
    }
    listener_.requests.fetch_add(1);
    const auto& head = parser_->get();
    if (static_cast<size_t>(std::distance(head.begin(), head.end())) > Limits().max_header_fields) {
      listener_.too_large.fetch_add(1);
      Refuse(431, "too many header fields\n");
      return;
    }
    const auto content_encoding = head[bhttp::field::content_encoding];
    if (!content_encoding.empty() && !EqualsIgnoringCase(content_encoding, "identity")) {
      listener_.encoding.fetch_add(1);
      Refuse(415, "Content-Encoding is not supported; send the body uncompressed\n");
      return;
    }
    const auto transfer_encoding = head[bhttp::field::transfer_encoding];
    if (!transfer_encoding.empty() && !EqualsIgnoringCase(transfer_encoding, "chunked")) {
      listener_.encoding.fetch_add(1);
      Refuse(415, "Transfer-Encoding other than chunked is not supported\n");
      return;
    }
    const std::string target(head.target());
    const size_t question = target.find('?');
    path_ = target.substr(0, question);
    query_text_ = question == std::string::npos ? "" : target.substr(question + 1);
    bool path_known = false;
    route_ = listener_.FindRoute(std::string(head.method_string()), path_, &path_known);
    if (route_ == nullptr) {
      Refuse(path_known ? 405 : 404, path_known ? "method not allowed\n" : "not found\n");
      return;
    }
    if (route_->gate == Gate::kLocalOrClientCertificate && !peer_is_loopback_ &&
        !client_certificate_verified_) {
      listener_.forbidden.fetch_add(1);
      Refuse(403,
             "this endpoint answers only callers on this host or with a trusted client "
             "certificate\n");
      return;
    }
    // The body budget: the declared length, or the whole limit for a chunked body.
    const auto length = parser_->content_length();
    const size_t need = length               ? static_cast<size_t>(*length)
                        : parser_->chunked() ? Limits().max_body_bytes
                                             : 0;
    if (need > 0) {
      if (need > Limits().large_body_bytes) {
        if (!listener_.ReserveLargeBody()) {
          listener_.overloaded.fetch_add(1);
          Refuse(503, "too many large requests in flight; retry\n");
          return;
        }
        holds_large_body_ = true;
      }
      if (!listener_.ReserveBody(need)) {
        ReleaseBody();
        listener_.overloaded.fetch_add(1);
        Refuse(503, "too many request bodies in flight; retry\n");
        return;
      }
      reserved_body_ = need;
    }
    if (EqualsIgnoringCase(head[bhttp::field::expect], "100-continue")) {
      continue_ =
          std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_, 11);
      bhttp::async_write(stream_, *continue_,
                         [self = this->shared_from_this()](beast::error_code wec, size_t) {
                           if (wec) return;
                           self->ReadBody();
                         });
      return;
    }
    ReadBody();
  }

  // The request deadline set at the header still runs: header and body share it.
  void ReadBody() {
    // Room for the declared body up front (up to 64 KiB), so it arrives in a few large reads
    // instead of a buffer grown from 512 bytes by doubling, request after request.
    if (const auto length = parser_->content_length()) {
      const size_t want = buffer_.size() + std::min<size_t>(*length, kBodyReadBytes);
      if (want > buffer_.capacity() && want <= buffer_.max_size()) buffer_.reserve(want);
    }
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = this->shared_from_this()](beast::error_code ec, size_t) {
                        if (ec) {
                          self->ReadFailed(ec);
                          return;
                        }
                        self->Dispatch();
                      });
  }

  void ReadFailed(beast::error_code ec) {
    if (ec == bhttp::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset) {
      return;
    }
    if (ec == beast::error::timeout) {
      listener_.deadline.fetch_add(1);
      return;  // the socket is already closed: nothing can be answered
    }
    if (ec == bhttp::error::body_limit) {
      listener_.too_large.fetch_add(1);
      // A chunked body is cut only once its decoded bytes pass the limit: what was read so far
      // is freed here, and given back to the system as after any large body.
      const bool large = parser_ && parser_->get().body().size() > kTrimAfterBodyBytes;
      parser_.reset();
      ReleaseBody();
      if (large) malloc_trim(0);
      Refuse(413,
             "request body larger than " + std::to_string(Limits().max_body_bytes) + " bytes\n");
      return;
    }
    if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) {
      listener_.too_large.fetch_add(1);
      Refuse(431, "request header larger than " + std::to_string(Limits().max_header_bytes) +
                      " bytes\n");
      return;
    }
    listener_.malformed.fetch_add(1);
    Refuse(400, "malformed HTTP request\n");
  }

  // Answers and closes: the rest of what the client sends is never read.
  void Refuse(int status, std::string body) {
    Response response = Response::Text(status, std::move(body));
    response.close = true;
    Write(std::move(response), /*request_keep_alive=*/false, 11);
  }

  void Dispatch() {
    auto request = std::make_shared<Request>();
    auto message = parser_->release();
    parser_.reset();
    request->method = std::string(message.method_string());
    request->path = path_;
    const bool keep_alive = message.keep_alive();
    const unsigned version = message.version();
    if (!DecodeQuery(query_text_, &request->query)) {
      ReleaseBody();
      listener_.malformed.fetch_add(1);
      Refuse(400, "malformed query string\n");
      return;
    }
    request->authorization = std::string(message[bhttp::field::authorization]);
    request->if_none_match = std::string(message[bhttp::field::if_none_match]);
    request->body = std::move(message.body());
    request->peer_is_loopback = peer_is_loopback_;
    request->client_certificate_verified = client_certificate_verified_;
    const Route* route = route_;
    // The handler may take long (a filter waiting for the first sync): no socket deadline while
    // it runs; the write has its own.
    Lowest().expires_never();
    if (route->lane == Lane::kInline) {
      Response response = RunHandler(*route, *request);
      const bool large = request->body.size() > kTrimAfterBodyBytes;
      request.reset();
      if (large) malloc_trim(0);
      ReleaseBody();
      Write(std::move(response), keep_alive, version);
      return;
    }
    WorkQueue& queue = route->lane == Lane::kProbe  ? *listener_.probes
                       : route->lane == Lane::kOpen ? *listener_.open_work
                       : route->lane == Lane::kBind ? *listener_.bind_work
                                                    : *listener_.work;
    auto self = this->shared_from_this();
    const bool queued = queue.TryPost([self, request, route, keep_alive, version]() mutable {
      Response response = RunHandler(*route, *request);
      const bool large = request->body.size() > kTrimAfterBodyBytes;
      request.reset();
      // glibc keeps what a large body freed in the worker's arena: give it back to the system,
      // so that a few large requests do not leave the process hundreds of MiB larger.
      if (large) malloc_trim(0);
      // The write starts here, not on the I/O thread: Asio tries the send at once, so the answer
      // does not wait for the I/O thread to wake (a tenth of a millisecond per filter). Nothing
      // else touches this connection meanwhile: no read is pending and no deadline is set while
      // a handler runs, and the queue's lock orders this thread after the one that queued it.
      self->ReleaseBody();
      self->Write(std::move(response), keep_alive, version);
    });
    if (!queued) {
      ReleaseBody();
      listener_.overloaded.fetch_add(1);
      Refuse(503, "server busy; retry\n");
    }
  }

  void Write(Response response, bool request_keep_alive, unsigned version) {
    auto message = std::make_shared<bhttp::response<bhttp::string_body>>(
        static_cast<bhttp::status>(response.status), version);
    message->set(bhttp::field::content_type, response.content_type);
    for (const auto& [name, value] : response.headers) message->set(name, value);
    message->body() = std::move(response.body);
    message->keep_alive(request_keep_alive && !response.close);
    message->prepare_payload();
    const bool close = !message->keep_alive();
    Lowest().expires_after(Limits().write_deadline);
    bhttp::async_write(
        stream_, *message,
        [self = this->shared_from_this(), message, close](beast::error_code ec, size_t) {
          if (ec) {
            if (ec == beast::error::timeout) self->listener_.deadline.fetch_add(1);
            return;
          }
          if (close) {
            beast::error_code ignored;
            self->Lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
            return;
          }
          self->WaitForRequest();
        });
  }

  void ReleaseBody() {
    if (holds_large_body_) {
      listener_.large_bodies.fetch_sub(1);
      holds_large_body_ = false;
    }
    if (reserved_body_ == 0) return;
    listener_.buffered_body_bytes.fetch_sub(reserved_body_);
    reserved_body_ = 0;
  }

  void EnterIdle() {
    std::lock_guard<std::mutex> lock(listener_.idle_mu);
    listener_.idle.push_back(this->weak_from_this());
    idle_entry = std::prev(listener_.idle.end());
    idle = true;
  }

  void LeaveIdle() {
    std::lock_guard<std::mutex> lock(listener_.idle_mu);
    if (!idle) return;
    listener_.idle.erase(idle_entry);
    idle = false;
  }

  Listener::Impl& listener_;
  Stream stream_;
  beast::flat_buffer buffer_;
  const bool peer_is_loopback_;
  bool client_certificate_verified_ = false;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::shared_ptr<bhttp::response<bhttp::empty_body>> continue_;
  std::string path_;
  std::string query_text_;
  const Route* route_ = nullptr;
  size_t reserved_body_ = 0;
  bool holds_large_body_ = false;
  std::chrono::steady_clock::time_point handshake_started_;
};

}  // namespace

const Route* Listener::Impl::FindRoute(const std::string& method, const std::string& path,
                                       bool* path_known) const {
  auto it = routes.find(path);
  *path_known = it != routes.end();
  if (it == routes.end()) return nullptr;
  for (const Route& route : it->second) {
    if (route.method == method) return &route;
  }
  return nullptr;
}

bool Listener::Impl::EvictIdle() {
  std::shared_ptr<Connection> victim;
  {
    std::lock_guard<std::mutex> lock(idle_mu);
    while (!idle.empty() && !victim) {
      victim = idle.front().lock();
      idle.pop_front();
      if (victim) victim->idle = false;  // off the list: its own LeaveIdle must not erase
    }
  }
  if (!victim) return false;
  victim->CloseFromOutside();
  evicted.fetch_add(1);
  return true;
}

void Listener::Impl::Accept() {
  acceptor->async_accept(net::make_strand(*io), [this](beast::error_code ec, tcp::socket socket) {
    OnAccept(ec, std::move(socket));
  });
}

void Listener::Impl::OnAccept(beast::error_code ec, tcp::socket socket) {
  if (stopped.load()) return;
  if (!ec) {
    accepted.fetch_add(1);
    if (open.load() >= options.limits.max_connections && !EvictIdle()) {
      refused.fetch_add(1);
      beast::error_code ignored;
      socket.close(ignored);
    } else {
      open.fetch_add(1);
      beast::error_code endpoint_error;
      const auto peer = socket.remote_endpoint(endpoint_error);
      const bool loopback = !endpoint_error && IsLoopback(peer.address());
      socket.set_option(tcp::no_delay(true), endpoint_error);  // small answers, no Nagle wait
      if (tls_context) {
        std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
            *this, loopback, std::move(socket), *tls_context)
            ->Start();
      } else {
        std::make_shared<Session<beast::tcp_stream>>(*this, loopback, std::move(socket))->Start();
      }
    }
  } else if (ec == net::error::no_descriptors) {
    // Out of file descriptors: make room rather than spin on the failing accept.
    if (!EvictIdle()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Accept();
}

Listener::Listener(ListenerOptions options, std::vector<Route> routes)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  for (Route& route : routes) impl_->routes[route.path].push_back(std::move(route));
}

Listener::~Listener() {
  Stop();
  // Workers first: their last answers are posted to the I/O context, which outlives them.
  if (impl_->work) impl_->work->Stop();
  if (impl_->probes) impl_->probes->Stop();
  if (impl_->open_work) impl_->open_work->Stop();
  if (impl_->bind_work) impl_->bind_work->Stop();
  impl_->acceptor.reset();
  impl_->io.reset();
}

Status Listener::Listen() {
  const ListenerOptions& o = impl_->options;
  auto hp = SplitHostPort(o.flag, o.bind);
  if (!hp.ok()) return Error{hp.error().message};
  if (!o.tls_cert_file.empty() || !o.tls_key_file.empty()) {
    if (o.tls_cert_file.empty() || o.tls_key_file.empty()) {
      return Error{"TLS needs both --tls-cert-file and --tls-key-file"};
    }
    impl_->tls = std::make_unique<TlsReloader>(o.tls_cert_file, o.tls_key_file);
    if (Status s = impl_->tls->Load(); !s.ok()) return s;
    impl_->tls_context.emplace(ssl::context::tls_server);
    SSL_CTX* ctx = impl_->tls_context->native_handle();
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    // OpenSSL's per-connection read and write buffers (tens of KiB) only while in use.
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    impl_->tls->Install(ctx);
    if (!o.client_ca_file.empty()) {
      if (SSL_CTX_load_verify_locations(ctx, o.client_ca_file.c_str(), nullptr) != 1) {
        return Error{"client CA " + o.client_ca_file + ": cannot load"};
      }
      // Asked, not required: callers on this host need none.
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    }
  } else if (!o.client_ca_file.empty()) {
    return Error{"a client CA needs TLS (--tls-cert-file and --tls-key-file)"};
  }
  const auto& [host, port] = hp.value();
  beast::error_code ec;
  const auto address = net::ip::make_address(host, ec);
  if (ec) return Error{o.flag + " " + o.bind + ": \"" + host + "\" is not an IP address"};
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  impl_->acceptor.emplace(*impl_->io);
  impl_->acceptor->open(endpoint.protocol(), ec);
  // SO_REUSEADDR only (restarts reuse a port in TIME_WAIT); never SO_REUSEPORT, with which a
  // second `tessera serve` would share the port and half the requests with its own state.
  if (!ec) impl_->acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor->bind(endpoint, ec);
  if (!ec) impl_->acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return Error{o.flag + " " + o.bind + ": cannot listen (" + ec.message() +
                 (ec == net::error::address_in_use ? "; is another process using the port?" : "") +
                 ")"};
  }
  impl_->port = impl_->acceptor->local_endpoint().port();
  impl_->work = std::make_unique<WorkQueue>(o.limits.work_threads, o.limits.work_queue);
  impl_->probes = std::make_unique<WorkQueue>(o.limits.probe_threads, o.limits.probe_queue);
  impl_->open_work = std::make_unique<WorkQueue>(o.limits.open_threads, o.limits.open_queue);
  // The bind lane's threads only where a route uses it (not in the agent).
  bool any_bind_route = false;
  for (const auto& [path, by_method] : impl_->routes) {
    for (const Route& route : by_method) any_bind_route |= route.lane == Lane::kBind;
  }
  if (any_bind_route) {
    impl_->bind_work = std::make_unique<WorkQueue>(o.limits.bind_threads, o.limits.bind_queue);
  }
  impl_->Accept();
  return Status::Ok();
}

void Listener::Serve() {
  if (!impl_->acceptor) return;
  std::vector<std::thread> extra;
  for (size_t i = 1; i < impl_->options.limits.io_threads; ++i) {
    extra.emplace_back([this] { impl_->io->run(); });
  }
  impl_->io->run();
  for (auto& thread : extra) thread.join();
}

void Listener::Stop() {
  impl_->stopped.store(true);
  impl_->io->stop();  // also before Serve: run() then returns at once
}

int Listener::port() const { return impl_->port; }

uint64_t Listener::tls_reloads() const { return impl_->tls ? impl_->tls->reloads() : 0; }

ListenerCounters Listener::counters() const {
  ListenerCounters c;
  c.connections_accepted = impl_->accepted.load();
  c.connections_open = impl_->open.load();
  c.connections_evicted = impl_->evicted.load();
  c.connections_refused = impl_->refused.load();
  c.requests = impl_->requests.load();
  c.deadline_exceeded = impl_->deadline.load();
  c.too_large = impl_->too_large.load();
  c.unsupported_encoding = impl_->encoding.load();
  c.malformed = impl_->malformed.load();
  c.overloaded = impl_->overloaded.load();
  c.forbidden = impl_->forbidden.load();
  return c;
}

}  // namespace tessera::http
