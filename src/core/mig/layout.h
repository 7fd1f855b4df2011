#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/device.h"

namespace tessera::mig {

inline constexpr int kMaxProfiles = 32;

// The occupancy of one MIG GPU: which memory slices are taken, how many instances of each
// profile exist, the compute slices in use and the media-engine holders. Small and copyable,
// so that a filter can work on a copy per candidate GPU.
struct Layout {
  uint32_t occupied = 0;  // bit i = memory slice i in use
  uint32_t compute_used = 0;
  std::array<uint8_t, kMaxProfiles> counts{};
  uint8_t media_shared = 0;  // +me instances
  uint8_t media_all = 0;     // +me.all instances
  uint8_t with_media = 0;    // instances of profiles that are not -me
  bool operator==(const Layout&) const = default;
};

// One instance a pod wants: memory to cover and, when given, the core share to cover.
struct InstanceDemand {
  int32_t mem_mib = 0;
  int32_t cores = 0;
  bool operator==(const InstanceDemand&) const = default;
};

struct InstanceChoice {
  int profile = -1;
  model::Placement placement;
};

// The MIG rules of one GPU, derived from the profiles it reports and the allowlist.
class GpuMigModel {
 public:
  // allowlist: profile names allowed for this GPU's model; nullptr allows every profile.
  GpuMigModel(const model::GpuDevice& device, const std::vector<std::string>* allowlist);

  const std::vector<model::MigProfile>& profiles() const { return profiles_; }
  bool Allowed(int profile) const { return allowed_[profile]; }
  int ProfileIndex(std::string_view name) const;
  uint32_t memory_slices() const { return memory_slices_; }
  uint32_t compute_slices() const { return compute_slices_; }
  // Memory of the largest allowed profile: what "100% of a MIG GPU" means.
  int32_t LargestProfileMemory() const;

  // Whether an instance of `profile` at `placement` is legal on top of `layout` (rules R1-R5:
  // a listed placement, no overlap, instance limit, media engines).
  bool CanPlace(const Layout& layout, int profile, const model::Placement& placement) const;
  void Place(Layout& layout, int profile, const model::Placement& placement) const;
  void Remove(Layout& layout, int profile, const model::Placement& placement) const;

  // Profiles that satisfy a demand, smallest first (memory, then compute slices, then name).
  std::vector<int> EligibleProfiles(const InstanceDemand& demand) const;

  // Places every demand on top of `base`, or nullopt when no arrangement exists. Exhaustive, so
  // never a false "infeasible". Among arrangements it keeps the largest free block of memory
  // slices, then uses the fewest compute slices, then the least memory; ties go to the first in
  // search order (smallest profiles first, highest start first). Result order = demands order.
  std::optional<std::vector<InstanceChoice>> Arrange(
      const Layout& base, const std::vector<InstanceDemand>& demands) const;

  // Longest run of free memory slices.
  uint32_t LargestFreeRun(const Layout& layout) const;

 private:
  std::vector<model::MigProfile> profiles_;
  std::vector<bool> allowed_;
  std::vector<model::MediaEngines> media_;  // per profile, parsed once from the name
  std::vector<int32_t> max_count_;          // per profile
  uint32_t memory_slices_ = 0;
  uint32_t compute_slices_ = 0;
};

uint32_t PlacementMask(const model::Placement& placement);

}  // namespace tessera::mig
