#include "core/model/device.h"

#include <algorithm>

#include "core/common/strings.h"

namespace tessera::model {

MediaEngines MigProfile::media() const {
  if (EndsWith(name, "+me.all")) return MediaEngines::kAll;
  if (EndsWith(name, "+me")) return MediaEngines::kShared;
  if (EndsWith(name, "-me")) return MediaEngines::kNone;
  return MediaEngines::kDefault;
}

int32_t MigProfile::EffectiveMaxCount() const {
  int32_t by_placements = static_cast<int32_t>(placements.size());
  // A media-engine profile owns the GPU's single OFA: one instance at most (rule R3/R4).
  int32_t limit = max_count > 0 ? max_count : by_placements;
  if (media() == MediaEngines::kShared || media() == MediaEngines::kAll) limit = std::min(limit, 1);
  return std::min(limit, by_placements);
}

std::string_view ToString(DeviceMode mode) {
  switch (mode) {
    case DeviceMode::kHamiCore:
      return "hami-core";
    case DeviceMode::kMig:
      return "mig";
    case DeviceMode::kMps:
      return "mps";
  }
  return "hami-core";
}

bool ParseDeviceMode(std::string_view text, DeviceMode* out) {
  if (text == "hami-core") {
    *out = DeviceMode::kHamiCore;
  } else if (text == "mig") {
    *out = DeviceMode::kMig;
  } else if (text == "mps") {
    *out = DeviceMode::kMps;
  } else {
    return false;
  }
  return true;
}

uint32_t GpuDevice::MemorySlices() const {
  uint32_t slices = 0;
  for (const auto& p : mig_profiles) {
    for (const auto& pl : p.placements) slices = std::max(slices, pl.end());
  }
  return slices;
}

uint32_t GpuDevice::ComputeSlices() const {
  uint32_t slices = 0;
  for (const auto& p : mig_profiles) slices = std::max(slices, p.slice_count);
  return slices;
}

}  // namespace tessera::model
