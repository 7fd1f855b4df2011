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
  // Client-side rate limit on requests to the API server (client-go's QPS and Burst): every
  // attempt of Send, retries included, and the start of every Stream takes a token from one
  // bucket shared by all threads. qps 0 (the default) = unlimited; burst below 1 counts as 1.
  double qps = 0;
  int burst = 0;
};

}  // namespace tessera::kube
