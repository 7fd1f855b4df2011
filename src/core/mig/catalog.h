#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/model/device.h"

namespace tessera::mig {

// What NVML reports for one GPU-instance profile beyond the scheduler's view: its two ids
// (mig-hardware.md section 1), SM count and engines. The simulated NVML serves these.
struct ProfileHardware {
  int32_t nvml_id = -1;    // info.id, the hardware profile id; -1 when the table lacks it
  int32_t nvml_enum = -1;  // NVML_GPU_INSTANCE_PROFILE_* value; -1 when unknown
  int32_t sm_count = 0;    // 0 when unknown
  int32_t copy_engines = 0;
  int32_t decoders = 0;
  int32_t encoders = 0;
  int32_t jpeg = 0;
  int32_t ofa = 0;
};

// One GPU model's MIG capabilities, as the built-in table (data/mig-profiles.json, compiled
// into the program) describes it.
struct GpuModelSpec {
  std::string model;                 // "A100-40GB"
  std::vector<std::string> aliases;  // NVML names, marketing names
  int32_t memory_mib = 0;            // total memory reported by NVML (estimated where unknown)
  uint32_t memory_slices = 0;
  uint32_t compute_slices = 0;
  bool complete = false;  // every profile has placements: usable in MIG mode
  std::vector<model::MigProfile> profiles;
  std::vector<ProfileHardware> hardware;      // parallel to profiles
  std::vector<std::string> estimated_fields;  // values filled in because the table lacks them
};

class GpuModelCatalog {
 public:
  // Parses a table in the mig-profiles.json format. Missing memory or SM counts are estimated
  // (documented in docs/mig.md) and listed in estimated_fields.
  static Result<GpuModelCatalog> Parse(std::string_view json_text);
  // The table compiled into the program.
  static Result<GpuModelCatalog> Builtin();

  // Finds a model by id or alias, case-insensitively, ignoring a leading "NVIDIA" and treating
  // '-', '_' and ' ' alike; nullptr when unknown.
  const GpuModelSpec* Find(std::string_view name) const;
  const std::vector<GpuModelSpec>& models() const { return models_; }

 private:
  std::vector<GpuModelSpec> models_;
};

}  // namespace tessera::mig
