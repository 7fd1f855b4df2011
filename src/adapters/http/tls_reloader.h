#pragma once

#include <openssl/ssl.h>

#include <chrono>
#include <ctime>
#include <mutex>
#include <string>

#include "core/common/result.h"

namespace tessera::http {

// Serves the certificate and key from files and picks up new ones (cert-manager rotates them in
// place) at the next handshake after the files change, checked at most once a second.
class TlsReloader {
 public:
  TlsReloader(std::string cert_file, std::string key_file);
  ~TlsReloader();
  TlsReloader(const TlsReloader&) = delete;
  TlsReloader& operator=(const TlsReloader&) = delete;

  // Loads the files now; errors name the file.
  Status Load();
  // Installs the per-handshake certificate callback on a server context.
  void Install(SSL_CTX* ctx);
  uint64_t reloads() const;

 private:
  static int CertCallback(SSL* ssl, void* arg);
  void MaybeReload();

  std::string cert_file_;
  std::string key_file_;
  mutable std::mutex mu_;
  X509* cert_ = nullptr;
  STACK_OF(X509) * chain_ = nullptr;
  EVP_PKEY* key_ = nullptr;
  std::timespec cert_mtime_{};
  std::timespec key_mtime_{};
  std::chrono::steady_clock::time_point last_check_{};
  uint64_t reloads_ = 0;
};

}  // namespace tessera::http
