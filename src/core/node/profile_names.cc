#include "core/node/profile_names.h"

#include <cmath>

namespace tessera::node {

namespace {

struct EnumInfo {
  uint32_t slices;
  const char* suffix;
};

// Indexed by NVML_GPU_INSTANCE_PROFILE_* (1_SLICE = 0 ... 3_SLICE_GFX = 0x11).
constexpr EnumInfo kEnums[] = {
    {1, ""},     {2, ""},    {3, ""},    {4, ""},        {7, ""},        {8, ""},
    {6, ""},     {1, "+me"}, {2, "+me"}, {1, ""},        {1, "+gfx"},    {2, "+gfx"},
    {4, "+gfx"}, {1, "-me"}, {2, "-me"}, {1, "+me.all"}, {2, "+me.all"}, {3, "+gfx"},
};

}  // namespace

uint32_t GpuInstanceSlices(uint32_t nvml_enum) {
  return nvml_enum < std::size(kEnums) ? kEnums[nvml_enum].slices : 0;
}

std::string MigProfileName(uint32_t nvml_enum, uint64_t profile_memory_mib,
                           uint64_t device_memory_mib) {
  if (nvml_enum >= std::size(kEnums) || device_memory_mib == 0) return "";
  const double eighths = std::ceil(8.0 * static_cast<double>(profile_memory_mib) /
                                   static_cast<double>(device_memory_mib));
  const double total_gb = std::ceil(static_cast<double>(device_memory_mib) / 1024.0);
  const auto gb = static_cast<long long>(std::llround(eighths / 8.0 * total_gb));
  return std::to_string(kEnums[nvml_enum].slices) + "g." + std::to_string(gb) + "gb" +
         kEnums[nvml_enum].suffix;
}

int ComputeProfileForSlices(uint32_t slices) {
  switch (slices) {
    case 1:
      return 0;
    case 2:
      return 1;
    case 3:
      return 2;
    case 4:
      return 3;
    case 7:
      return 4;
    case 8:
      return 5;
    case 6:
      return 6;
    default:
      return -1;
  }
}

}  // namespace tessera::node
