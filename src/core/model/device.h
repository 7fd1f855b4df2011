#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::model {

// A legal GPU-instance placement, in the memory-slice units NVML reports.
struct Placement {
  uint32_t start = 0;
  uint32_t size = 0;
  bool operator==(const Placement&) const = default;
  uint32_t end() const { return start + size; }
  bool Overlaps(const Placement& o) const { return start < o.end() && o.start < end(); }
};

// Media-engine class of a profile, from its name suffix (mig-hardware.md rules R4, R5).
enum class MediaEngines { kDefault, kShared /* +me */, kAll /* +me.all */, kNone /* -me */ };

struct MigProfile {
  std::string name;          // "1g.24gb"
  int32_t memory_mib = 0;    // the instance's memory, accounted instead of the request
  int32_t core = 0;          // core share in percent of the GPU
  uint32_t slice_count = 0;  // compute slices ("Ng")
  std::vector<Placement> placements;
  int32_t max_count = 0;  // instances of this profile per GPU; 0 = bounded by placements

  MediaEngines media() const;
  int32_t EffectiveMaxCount() const;
};

enum class DeviceMode { kHamiCore, kMig, kMps };
std::string_view ToString(DeviceMode mode);
// Unknown strings map to false; the register codec keeps the raw string for type checks.
bool ParseDeviceMode(std::string_view text, DeviceMode* out);

// The device mode of a GPU in MIG mode, as registered.
inline constexpr std::string_view kMigMode = "mig";

// One physical GPU as the node agent registers it (hami.io/node-nvidia-register).
struct GpuDevice {
  std::string uuid;
  uint32_t index = 0;
  int32_t count = 0;  // split count (max concurrent tasks)
  int32_t total_mem_mib = 0;
  int32_t total_cores = 0;
  std::string type;  // model string, e.g. "NVIDIA A100-SXM4-40GB"
  int32_t numa = 0;
  std::string mode = "hami-core";  // raw mode string; "mig" enables MIG placement
  bool healthy = false;
  std::vector<MigProfile> mig_profiles;

  bool IsMig() const { return mode == kMigMode; }
  // Placement grid size: the end of the largest placement over all profiles.
  uint32_t MemorySlices() const;
  // Compute-slice budget: the largest slice count of any profile.
  uint32_t ComputeSlices() const;
};

// Pair scores between GPUs of one node (hami.io/node-nvidia-score): score[a][b].
using PairScores = std::map<std::string, std::map<std::string, int32_t>>;

}  // namespace tessera::model
