#pragma once

// tessera's node annotation tessera.io/foreign-mig-instances: the MIG instances on the node's
// GPUs that tessera did not create (made by nvidia-mig-parted, an operator, HAMi's plugin, or
// left when a ledger was lost). The agent writes it; tessera's scheduler reads it and never
// places a MIG instance on their slices. HAMi's scheduler ignores the key (docs/agent.md,
// "Foreign instances").
//
// A compact JSON list, one object per instance, in a fixed order (GPU, start, size, profile,
// GPU instance id) so that equal sets encode to equal text:
//   [{"gpu":"GPU-…","profile":"1g.10gb","start":0,"size":1,"gi":9}, …]
// "gi" (the GPU instance id) is for people reading it. Unknown keys are ignored, so a newer
// agent may add some; sizes are bounded so that a corrupt annotation cannot cost memory.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/model/device.h"

namespace tessera::codec {

struct ForeignMigInstance {
  std::string gpu_uuid;
  std::string profile;
  model::Placement placement;    // memory slices
  uint32_t gpu_instance_id = 0;  // for people; 0 when unknown
  bool operator==(const ForeignMigInstance&) const = default;
};

// At most this many instances per node: a GPU holds at most 7 (8 memory slices), and no node
// has more than 8 GPUs in MIG mode, so 64 leaves room and bounds what a corrupt value costs.
inline constexpr size_t kMaxForeignMigInstances = 64;
// Longest GPU UUID and profile name accepted ("GPU-" and 36 characters; "1g.10gb+me.all").
inline constexpr size_t kMaxForeignGpuUuidLength = 128;
inline constexpr size_t kMaxForeignProfileLength = 64;
// Longest annotation value read: 64 entries of the longest fields fit well within it.
inline constexpr size_t kMaxForeignMigAnnotationBytes = size_t{32} * 1024;

// The instances in the annotation's order (sorted, duplicates removed), at most
// kMaxForeignMigInstances of them; `dropped` (optional) receives how many were left out.
std::vector<ForeignMigInstance> CanonicalForeignMigInstances(
    std::vector<ForeignMigInstance> instances, size_t* dropped = nullptr);

// The annotation's value for `instances` (put in canonical order first); "" for none, so the
// caller deletes the key.
std::string EncodeForeignMigInstances(std::vector<ForeignMigInstance> instances);

// Reads the annotation of node `node`. Every error names the node, the annotation, the entry
// and the field ("node gpu-1: annotation tessera.io/foreign-mig-instances[2].start: ...").
// An empty value is no instance.
Result<std::vector<ForeignMigInstance>> DecodeForeignMigInstances(std::string_view text,
                                                                  std::string_view node);

}  // namespace tessera::codec
