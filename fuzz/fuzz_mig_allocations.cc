// Fuzzes hami.io/vgpu-mig-allocations (a JSON array of MIG instances).
// Property: whatever decodes re-encodes to text that decodes to the same allocations.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/codec/mig_allocations.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto decoded = tessera::codec::DecodeMigAllocations(text);
  if (!decoded.ok()) return 0;
  const std::string encoded = tessera::codec::EncodeMigAllocations(decoded.value());
  auto again = tessera::codec::DecodeMigAllocations(encoded);
  if (!again.ok()) {
    std::fprintf(stderr, "re-encoding does not decode: %s\n%s\n", again.error().message.c_str(),
                 encoded.c_str());
    std::abort();
  }
  if (again.value() != decoded.value()) {
    std::fprintf(stderr, "round trip changed the allocations: %s\n", encoded.c_str());
    std::abort();
  }
  return 0;
}
