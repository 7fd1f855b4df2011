#include "scheduler_runtime/defrag_endpoint.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::scheduler_runtime {
namespace {

// A plan's evictions are searched set by set: the cap keeps one request's work bounded.
constexpr int kMaxEvictionsPerRequest = 32;

std::optional<double> PositiveNumber(const std::string& text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value) || value <= 0) return std::nullopt;
  return value;
}

std::optional<int> SmallCount(const std::string& text) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value < 0 || value > kMaxEvictionsPerRequest) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

http::Response DefragEndpoint::Handle(const http::Request& request) {
  static constexpr std::string_view kNames[] = {"format", "max-evictions", "min-gain",
                                                "min-fragmentation-drop"};
  for (const auto& [name, value] : request.query) {
    bool known = false;
    for (std::string_view k : kNames) known = known || name == k;
    if (!known) {
      return http::Response::Text(400, "unknown query parameter \"" + name +
                                           "\" (expected format, max-evictions, min-gain, "
                                           "min-fragmentation-drop)\n");
    }
    if (request.ParamCount(name) > 1) {
      return http::Response::Text(400, "query parameter \"" + name + "\" given more than once\n");
    }
  }
  const std::string format = request.ParamCount("format") == 1 ? request.Param("format") : "text";
  if (format != "text" && format != "json") {
    return http::Response::Text(400, "format: expected text or json, got \"" + format + "\"\n");
  }
  sched::DefragLimits limits;
  if (request.ParamCount("max-evictions") == 1) {
    auto n = SmallCount(request.Param("max-evictions"));
    if (!n) {
      return http::Response::Text(400, "max-evictions: expected a whole number from 0 to " +
                                           std::to_string(kMaxEvictionsPerRequest) + "\n");
    }
    limits.max_evictions = *n;
  }
  if (request.ParamCount("min-gain") == 1) {
    auto gain = PositiveNumber(request.Param("min-gain"));
    if (!gain) return http::Response::Text(400, "min-gain: expected a number above 0 (GiB)\n");
    limits.min_gain = *gain;
  }
  if (request.ParamCount("min-fragmentation-drop") == 1) {
    auto drop = PositiveNumber(request.Param("min-fragmentation-drop"));
    if (!drop) {
      return http::Response::Text(400,
                                  "min-fragmentation-drop: expected a number above 0 (GPUs)\n");
    }
    limits.min_fragmentation_drop = *drop;
  }
  std::unique_lock one_at_a_time(planning_, std::try_to_lock);
  if (!one_at_a_time.owns_lock()) {
    http::Response busy = http::Response::Text(429, "a defragmentation plan is being made\n");
    busy.headers.emplace_back("Retry-After", "1");
    return busy;
  }
  std::string why;
  if (!service_.view.Ready(&why)) {
    return http::Response::Text(503, "the cluster view is not ready: " + why + "\n");
  }
  scheduler::DefragResult result = service_.reads.Defrag(limits, format == "json");
  service_.view.metrics().DefragPlanned(result.plan);
  http::Response response = http::Response::Text(200, std::move(result.body));
  response.content_type = result.json ? "application/json" : "text/plain; charset=utf-8";
  return response;
}

}  // namespace tessera::scheduler_runtime
