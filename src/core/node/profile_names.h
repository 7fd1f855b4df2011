#pragma once

#include <cstdint>
#include <string>

namespace tessera::node {

// The go-nvlib name of a GPU-instance profile (mig-hardware.md section 6):
// "<G>g.<GB>gb" plus "+me", "+me.all", "+gfx" or "-me" from the NVML profile enum, where
// GB = round(ceil(8 * memory / total) / 8 * ceil(total / 1 GiB)). "" for an unknown enum.
std::string MigProfileName(uint32_t nvml_enum, uint64_t profile_memory_mib,
                           uint64_t device_memory_mib);

// Compute slices of a GPU-instance profile enum (0 when unknown), and the matching
// NVML_COMPUTE_INSTANCE_PROFILE_* for one compute instance covering the whole GPU instance.
uint32_t GpuInstanceSlices(uint32_t nvml_enum);
int ComputeProfileForSlices(uint32_t slices);  // -1 when none

}  // namespace tessera::node
