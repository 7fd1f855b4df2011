#pragma once

#include <cstdint>
#include <string_view>

namespace tessera::model {

// Two bits of 64 for a GPU UUID (from its FNV-1a hash), a filter of Bloom's kind: a UUID that a
// pod names (nvidia.com/use-gpuuuid, nouse-gpuuuid) and whose bits are not all in the union of a
// node's GPUs' is none of them, so the filter compares strings on few nodes (about 5% of nodes
// with 8 GPUs, per UUID named).
constexpr uint64_t UuidBits(std::string_view uuid) {
  uint64_t h = 14695981039346656037ULL;
  for (const char c : uuid) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return (uint64_t{1} << (h & 63)) | (uint64_t{1} << ((h >> 6) & 63));
}

}  // namespace tessera::model
