#include "adapters/http/tls_reloader.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdio>
#include <memory>

namespace tessera::http {
namespace {

bool MTime(const std::string& path, std::timespec* out) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return false;
  *out = st.st_mtim;
  return true;
}

bool SameTime(const std::timespec& a, const std::timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

std::string OpenSslError() {
  unsigned long code = ERR_get_error();
  if (code == 0) return "no PEM data";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

struct FileCloser {
  void operator()(FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};

}  // namespace

TlsReloader::TlsReloader(std::string cert_file, std::string key_file)
    : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)) {}

TlsReloader::~TlsReloader() {
  X509_free(cert_);
  if (chain_ != nullptr) sk_X509_pop_free(chain_, X509_free);
  EVP_PKEY_free(key_);
}

Status TlsReloader::Load() {
  std::timespec cert_time{};
  std::timespec key_time{};
  if (!MTime(cert_file_, &cert_time))
    return Error{"TLS certificate " + cert_file_ + ": cannot stat"};
  if (!MTime(key_file_, &key_time)) return Error{"TLS key " + key_file_ + ": cannot stat"};
  std::unique_ptr<FILE, FileCloser> cf(std::fopen(cert_file_.c_str(), "r"));
  if (!cf) return Error{"TLS certificate " + cert_file_ + ": cannot open"};
  X509* cert = PEM_read_X509(cf.get(), nullptr, nullptr, nullptr);
  if (cert == nullptr) return Error{"TLS certificate " + cert_file_ + ": " + OpenSslError()};
  STACK_OF(X509)* chain = sk_X509_new_null();
  while (X509* extra = PEM_read_X509(cf.get(), nullptr, nullptr, nullptr)) {
    sk_X509_push(chain, extra);
  }
  ERR_clear_error();  // the loop ends on "no start line"
  std::unique_ptr<FILE, FileCloser> kf(std::fopen(key_file_.c_str(), "r"));
  EVP_PKEY* key = kf ? PEM_read_PrivateKey(kf.get(), nullptr, nullptr, nullptr) : nullptr;
  if (key == nullptr || X509_check_private_key(cert, key) != 1) {
    std::string why = kf ? OpenSslError() : "cannot open";
    X509_free(cert);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
    return Error{"TLS key " + key_file_ + ": " + why + " (or it does not match the certificate)"};
  }
  std::lock_guard lock(mu_);
  X509_free(cert_);
  if (chain_ != nullptr) sk_X509_pop_free(chain_, X509_free);
  EVP_PKEY_free(key_);
  cert_ = cert;
  chain_ = chain;
  key_ = key;
  cert_mtime_ = cert_time;
  key_mtime_ = key_time;
  ++reloads_;
  return Status::Ok();
}

void TlsReloader::Install(SSL_CTX* ctx) {
  SSL_CTX_set_cert_cb(ctx, &TlsReloader::CertCallback, this);
}

uint64_t TlsReloader::reloads() const {
  std::lock_guard lock(mu_);
  return reloads_;
}

void TlsReloader::MaybeReload() {
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_check_ < std::chrono::seconds(1)) return;
    last_check_ = now;
    std::timespec c{};
    std::timespec k{};
    if (!MTime(cert_file_, &c) || !MTime(key_file_, &k)) return;
    if (SameTime(c, cert_mtime_) && SameTime(k, key_mtime_)) return;
  }
  // A half-written pair fails to load or to match; the old pair stays until both are new.
  if (Status s = Load(); !s.ok()) spdlog::warn("keeping the old TLS certificate: {}", s.message());
}

int TlsReloader::CertCallback(SSL* ssl, void* arg) {
  auto* self = static_cast<TlsReloader*>(arg);
  self->MaybeReload();
  std::lock_guard lock(self->mu_);
  if (self->cert_ == nullptr || self->key_ == nullptr) return 0;
  if (SSL_use_certificate(ssl, self->cert_) != 1) return 0;
  if (SSL_use_PrivateKey(ssl, self->key_) != 1) return 0;
  if (self->chain_ != nullptr && SSL_set1_chain(ssl, self->chain_) != 1) return 0;
  return 1;
}

}  // namespace tessera::http
