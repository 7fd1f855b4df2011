#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "adapters/kube/client_options.h"
#include "adapters/kube/curl_transport.h"

namespace tessera::kube {

// Whether a failed attempt may be repeated without risking a write being applied twice.
bool IsRetryable(std::string_view method, const TransferOutcome& outcome);

// The wait before retry number `retry` (0 for the first): the server's Retry-After when it sent
// one (capped), otherwise exponential backoff.
std::chrono::milliseconds RetryDelay(const Response& response, int retry,
                                     const ClientOptions& options);

// Retry-After in its delay-seconds form; the HTTP-date form is rare from the API server.
std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value);

}  // namespace tessera::kube
