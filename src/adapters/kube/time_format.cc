#include "adapters/kube/time_format.h"

#include <cstdio>
#include <ctime>

namespace tessera::kube {
namespace {

std::string Format(std::chrono::system_clock::time_point time, bool micros) {
  const auto since_epoch =
      std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch());
  auto seconds = std::chrono::floor<std::chrono::seconds>(since_epoch);
  const long long fraction = (since_epoch - seconds).count();
  const std::time_t t = static_cast<std::time_t>(seconds.count());
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[40];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
  std::string out(text);
  if (micros) {
    std::snprintf(text, sizeof text, ".%06lld", fraction);
    out += text;
  }
  return out + "Z";
}

}  // namespace

std::string FormatMicroTime(std::chrono::system_clock::time_point time) {
  return Format(time, true);
}

std::string FormatTime(std::chrono::system_clock::time_point time) { return Format(time, false); }

}  // namespace tessera::kube
