#pragma once

#include <chrono>
#include <string>

namespace tessera::kube {

// metav1.MicroTime: "2026-11-30T06:01:02.123456Z" (UTC, always six fractional digits).
std::string FormatMicroTime(std::chrono::system_clock::time_point time);
// metav1.Time: "2026-11-30T06:01:02Z".
std::string FormatTime(std::chrono::system_clock::time_point time);

}  // namespace tessera::kube
