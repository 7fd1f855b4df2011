// Fuzzes the node annotations hami.io/node-nvidia-register and hami.io/node-nvidia-score.
// Property: whatever decodes re-encodes to text that decodes to the same devices (scores).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/codec/node_register.h"

namespace {

using tessera::model::GpuDevice;
using tessera::model::MigProfile;

bool SameProfile(const MigProfile& a, const MigProfile& b) {
  return a.name == b.name && a.memory_mib == b.memory_mib && a.core == b.core &&
         a.slice_count == b.slice_count && a.placements == b.placements &&
         a.max_count == b.max_count;
}

bool SameDevice(const GpuDevice& a, const GpuDevice& b) {
  if (a.uuid != b.uuid || a.index != b.index || a.count != b.count ||
      a.total_mem_mib != b.total_mem_mib || a.total_cores != b.total_cores || a.type != b.type ||
      a.numa != b.numa || a.mode != b.mode || a.healthy != b.healthy ||
      a.mig_profiles.size() != b.mig_profiles.size()) {
    return false;
  }
  for (size_t i = 0; i < a.mig_profiles.size(); ++i) {
    if (!SameProfile(a.mig_profiles[i], b.mig_profiles[i])) return false;
  }
  return true;
}

[[noreturn]] void Fail(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "round trip failed: %s\n%s\n", what.c_str(), detail.c_str());
  std::abort();
}

void CheckRegister(std::string_view text) {
  auto decoded = tessera::codec::DecodeNodeRegister(text);
  if (!decoded.ok()) return;
  const std::string encoded = tessera::codec::EncodeNodeRegister(decoded.value());
  auto again = tessera::codec::DecodeNodeRegister(encoded);
  if (!again.ok()) Fail("register re-encoding does not decode", again.error().message);
  if (again->size() != decoded->size()) Fail("register device count differs", encoded);
  for (size_t i = 0; i < decoded->size(); ++i) {
    if (!SameDevice((*decoded)[i], (*again)[i])) Fail("register device differs", encoded);
  }
}

void CheckPairScores(std::string_view text) {
  auto decoded = tessera::codec::DecodePairScores(text);
  if (!decoded.ok()) return;
  const std::string encoded = tessera::codec::EncodePairScores(decoded.value());
  auto again = tessera::codec::DecodePairScores(encoded);
  if (!again.ok()) Fail("pair scores re-encoding does not decode", again.error().message);
  if (again.value() != decoded.value()) Fail("pair scores differ", encoded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckRegister(text);
  CheckPairScores(text);
  return 0;
}
