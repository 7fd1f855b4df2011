// Fuzzes hami.io/vgpu-devices-allocated ("uuid,type,usedmem,usedcores:...;").
// Property: whatever decodes re-encodes to text that decodes to the same slots and devices.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/codec/pod_devices.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto decoded = tessera::codec::DecodePodDevices(text);
  if (!decoded.ok()) return 0;
  const std::string encoded = tessera::codec::EncodePodDevices(decoded.value());
  auto again = tessera::codec::DecodePodDevices(encoded);
  if (!again.ok()) {
    std::fprintf(stderr, "re-encoding does not decode: %s\n%s\n", again.error().message.c_str(),
                 encoded.c_str());
    std::abort();
  }
  if (again.value() != decoded.value()) {
    std::fprintf(stderr, "round trip changed the devices: %s\n", encoded.c_str());
    std::abort();
  }
  return 0;
}
