#pragma once

#include <chrono>
#include <string>

namespace tessera::kube {

struct ClientOptions {
  std::string user_agent = "tessera";
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{30000};  // whole request; streams have none
  // Retries: 429 (honouring Retry-After) for every verb; 5xx and transport errors for GET;
  // other verbs also when the connection failed before anything was sent.
  int max_retries = 5;
  std::chrono::milliseconds retry_backoff_initial{200};  // doubled per retry
  std::chrono::milliseconds retry_backoff_max{5000};
  std::chrono::milliseconds retry_after_max{10000};         // cap on the server's Retry-After
  std::chrono::milliseconds token_refresh_interval{60000};  // token_file re-read period
};

}  // namespace tessera::kube
