#include "adapters/kube/retry_policy.h"

#include <algorithm>

#include "core/common/strings.h"

namespace tessera::kube {

bool IsRetryable(std::string_view method, const TransferOutcome& outcome) {
  const Response& r = outcome.response;
  if (r.cancelled || outcome.ended_by_receiver) return false;
  if (r.status == 429) return true;  // API Priority and Fairness rejected it unprocessed
  const bool idempotent = method == "GET";
  if (r.status == 0) {
    if (outcome.permanent_failure) return false;
    return idempotent || !outcome.request_sent;
  }
  return idempotent && r.status >= 500 && r.status <= 599;
}

std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value) {
  long long seconds = 0;
  if (!ParseInt64(Trim(value), &seconds) || seconds < 0) return std::nullopt;
  return std::chrono::seconds(seconds);
}

std::chrono::milliseconds RetryDelay(const Response& response, int retry,
                                     const ClientOptions& options) {
  if (auto it = response.headers.find("retry-after"); it != response.headers.end()) {
    if (auto after = ParseRetryAfter(it->second)) {
      return std::min<std::chrono::milliseconds>(*after, options.retry_after_max);
    }
  }
  std::chrono::milliseconds delay = options.retry_backoff_initial;
  for (int i = 0; i < retry && delay < options.retry_backoff_max; ++i) delay *= 2;
  return std::min(delay, options.retry_backoff_max);
}

}  // namespace tessera::kube
