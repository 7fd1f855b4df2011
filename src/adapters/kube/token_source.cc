#include "adapters/kube/token_source.h"

#include <utility>

#include "adapters/yaml/yaml_json.h"
#include "core/common/strings.h"

namespace tessera::kube {

TokenSource::TokenSource(std::string token, std::string token_file,
                         std::chrono::milliseconds refresh)
    : token_file_(std::move(token_file)),
      refresh_(refresh),
      token_(std::move(token)),
      last_read_(std::chrono::steady_clock::now()) {
  if (token_.empty() && !token_file_.empty()) ReadFileLocked();
}

void TokenSource::ReadFileLocked() {
  last_read_ = std::chrono::steady_clock::now();
  auto text = adapters::ReadFile(token_file_);
  // A failed or empty read keeps the old token: the kubelet may be rewriting the file.
  if (text.ok()) {
    if (std::string token = Trim(*text); !token.empty()) token_ = std::move(token);
  }
}

std::string TokenSource::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!token_file_.empty() && std::chrono::steady_clock::now() - last_read_ >= refresh_) {
    ReadFileLocked();
  }
  return token_;
}

bool TokenSource::RefreshAfterUnauthorized(const std::string& rejected) {
  if (token_file_.empty()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  ReadFileLocked();
  return token_ != rejected;
}

}  // namespace tessera::kube
