#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
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

// How many more instances of each profile fit on a GPU in one occupancy, each profile counted
// on its own ("if every future request asked for this profile, how many could still come").
using ProfileRoom = std::array<uint8_t, kMaxProfiles>;

class LayoutTable;

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

// What free memory that no profile of the mix can cover takes off placeability, per stranded
// slice (GpuMigModel::Stranded). `memory` counts every such slice (below 0: the slice's GiB,
// SliceGib()); `idle_compute` is added for each one that also leaves a compute slice idle, i.e.
// up to the free compute slices the coverable memory cannot hold (StrandedCounts).
struct StrandedValue {
  double memory = -1;
  double idle_compute = 0;
  bool operator==(const StrandedValue&) const = default;
};

// Stranded memory slices, and how many of them leave compute idle as well.
struct StrandedCounts {
  uint32_t memory = 0;
  uint32_t idle_compute = 0;
};

// From the stranded memory slices, the free compute slices and the free memory slices some
// profile of the mix can still cover: an instance takes at least one memory slice per compute
// slice, so compute beyond the coverable memory can never be used.
inline StrandedCounts CountStranded(uint32_t stranded_memory, uint32_t free_compute,
                                    uint32_t coverable_memory) {
  const uint32_t idle = free_compute > coverable_memory ? free_compute - coverable_memory : 0;
  return StrandedCounts{stranded_memory, std::min(stranded_memory, idle)};
}

// What Arrange optimises once the demand mix is known (docs/placement.md).
struct ArrangeGoal {
  // Per profile index: what one more placeable instance of the profile is worth (MigWeights:
  // the share of future requests that would take it times its memory slices). The
  // placeability of a layout is the sum over profiles of weight x room.
  const std::vector<double>* profile_weights = nullptr;
  // Off: each instance gets the smallest eligible profile that can be placed (the least memory
  // in total), and placeability only chooses among those. On: a larger profile may be chosen
  // when it leaves more placeability.
  bool allow_larger_profiles = false;
  // What each free memory slice that no profile of the mix can cover takes off placeability
  // (MigWeights::Stranded; StrandedValue above).
  StrandedValue stranded;
};

// How good an arrangement is, for comparing arrangements on different GPUs of a node.
struct ArrangeScore {
  int64_t memory = 0;       // MiB of the chosen profiles
  double placeability = 0;  // of the GPU afterwards
  int32_t largest = 0;      // memory of the largest profile still placeable afterwards
  uint32_t compute = 0;     // compute slices in use afterwards
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
  // GiB of one memory slice (of the profile with the most slices, allowed or not): what makes
  // slices of different models comparable.
  double SliceGib() const { return slice_gib_; }

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
  // The same under a demand-aware goal: among arrangements (smallest profiles only, unless the
  // goal allows larger ones) the most placeability left, then the largest placeable profile,
  // then the fewest compute slices, then the first in search order. `score` receives the
  // chosen arrangement's score.
  std::optional<std::vector<InstanceChoice>> Arrange(const Layout& base,
                                                     const std::vector<InstanceDemand>& demands,
                                                     const ArrangeGoal& goal,
                                                     ArrangeScore* score = nullptr) const;

  // Sum over profiles of weight x room, minus the stranded memory (Stranded, valued by
  // `stranded`) when weights are given: with MigWeights, the memory (GiB) that future requests,
  // drawn from the demand mix, could still take on this GPU (each profile's room counted on its
  // own), less the free memory none of them can use until an instance leaves.
  double Placeability(const Layout& layout, const std::vector<double>& profile_weights,
                      const StrandedValue& stranded = {}) const;
  // Free memory slices of `layout` that no placement still legal on it, of a profile with a
  // positive weight, covers (memory no request of the mix can use until an instance leaves),
  // and how many of them leave a compute slice idle too (CountStranded).
  StrandedCounts Stranded(const Layout& layout, const std::vector<double>& profile_weights) const;
  // Memory of the largest allowed profile that can still be placed (0 when none).
  int32_t LargestPlaceable(const Layout& layout) const;
  // Both at once (one table lookup).
  void Assess(const Layout& layout, const std::vector<double>& profile_weights,
              double* placeability, int32_t* largest, const StrandedValue& stranded = {}) const;

  // Longest run of free memory slices.
  uint32_t LargestFreeRun(const Layout& layout) const;

  // The room per profile in `layout`: a lookup in the model's layout table when it has one and
  // the layout is in it, computed otherwise (both give the same answer).
  ProfileRoom Room(const Layout& layout) const;
  ProfileRoom ComputeRoom(const Layout& layout) const;
  // Models with equal rules (profiles with their memory and core share, placements, limits,
  // allowlist) share one table.
  std::string RulesKey() const;
  void set_table(std::shared_ptr<const LayoutTable> table) { table_ = std::move(table); }
  const LayoutTable* table() const { return table_.get(); }
  // What identifies these rules in a cache: the shared table, or the model itself when it has
  // none (its rules are not interned).
  const void* RulesIdentity() const {
    return table_ != nullptr ? static_cast<const void*>(table_.get())
                             : static_cast<const void*>(this);
  }

 private:
  std::optional<std::vector<InstanceChoice>> ArrangeWith(const Layout& base,
                                                         const std::vector<InstanceDemand>& demands,
                                                         const ArrangeGoal* goal,
                                                         ArrangeScore* score) const;
  // Stranded with the layout's room already looked up.
  StrandedCounts StrandedGiven(const Layout& layout, const std::vector<double>& profile_weights,
                               const ProfileRoom& room) const;

  std::vector<model::MigProfile> profiles_;
  std::vector<bool> allowed_;
  std::vector<std::vector<model::Placement>> placements_high_first_;  // per profile
  std::vector<model::MediaEngines> media_;              // per profile, parsed once from the name
  std::vector<int32_t> max_count_;                      // per profile
  std::vector<std::vector<uint32_t>> placement_masks_;  // per profile, per placement
  uint32_t memory_slices_ = 0;
  uint32_t compute_slices_ = 0;
  double slice_gib_ = 0;
  std::shared_ptr<const LayoutTable> table_;
};

uint32_t PlacementMask(const model::Placement& placement);

}  // namespace tessera::mig
