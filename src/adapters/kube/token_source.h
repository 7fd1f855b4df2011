#pragma once

#include <chrono>
#include <mutex>
#include <string>

namespace tessera::kube {

// The bearer token to send. Bound service-account tokens expire and the kubelet rewrites the
// file, so a token file is re-read periodically and when the server rejects the token.
// Thread-safe.
class TokenSource {
 public:
  TokenSource(std::string token, std::string token_file, std::chrono::milliseconds refresh);

  std::string Current();
  // After a 401 with `rejected`: re-reads the file; true when there is a different token to try.
  bool RefreshAfterUnauthorized(const std::string& rejected);
  bool has_file() const { return !token_file_.empty(); }

 private:
  void ReadFileLocked();

  const std::string token_file_;
  const std::chrono::milliseconds refresh_;
  std::mutex mu_;
  std::string token_;
  std::chrono::steady_clock::time_point last_read_;
};

}  // namespace tessera::kube
