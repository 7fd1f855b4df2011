#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/common/result.h"
#include "core/mig/layout.h"
#include "core/sched/request.h"

namespace tessera::sched {

// One MIG instance as a pod asks for it, independent of the GPU model it may land on: the
// profile it maps to is resolved per model (smallest eligible profile).
struct MigDemandKey {
  int32_t mem_mib = 0;      // 0: use mem_percent
  int32_t mem_percent = 0;  // of the largest allowed profile's memory
  int32_t cores = 0;
  auto Tie() const { return std::tie(mem_mib, mem_percent, cores); }
  bool operator<(const MigDemandKey& o) const { return Tie() < o.Tie(); }
  bool operator==(const MigDemandKey& o) const { return Tie() == o.Tie(); }
};

MigDemandKey MigDemandOf(const ContainerRequest& request);

// The MIG requests the cluster sees, learned online: each observed instance adds 1 to its key
// and every count decays by `decay` per observation, so the mix follows the recent workload.
class MigDemandMix {
 public:
  explicit MigDemandMix(double decay = 0.9995, size_t max_kinds = 64)
      : decay_(decay), max_kinds_(max_kinds) {}
  void Observe(const MigDemandKey& key, double weight = 1.0);
  // Current (decayed) counts; their sum is total().
  std::vector<std::pair<MigDemandKey, double>> Entries() const;
  double total() const { return total_ / scale_; }
  uint64_t version() const { return version_; }

 private:
  double decay_;
  size_t max_kinds_;
  double scale_ = 1.0;  // counts are stored multiplied by scale_, so decay is O(1)
  double total_ = 0;
  std::map<MigDemandKey, double> counts_;
  uint64_t version_ = 0;
};

// What is assumed before (and alongside) observations: a weight per profile size in compute
// slices ("1g=4,3g=1"); empty = every size the GPU model offers, equally. `strength` is how
// many observations the prior is worth.
struct MigPrior {
  std::map<uint32_t, double> by_slices;
  double strength = 8;
};

// Parses "1g=4,2g=1,7g=0.5" (weights >= 0, at least one > 0). Errors name the entry.
Result<MigPrior> ParseMigPrior(const std::string& text, double strength);

// What the cluster shows that the MIG weights depend on (Scheduler::FleetSignals): how many of
// the MIG pods placed have left, and per GPU model how full its GPUs are and how much room they
// keep for each profile. Both terms of placeability read it once pods leave, and are as without
// it until then (at saturation the decisions are the same):
// - StrandedScale: a slice no profile of the mix can cover is lost until an instance beside it
//   leaves: for good where pods do not leave (at saturation the full cost steers instances so
//   that none is stranded), for a while where they do, and then only as far as the model's GPUs
//   are full (free memory elsewhere serves the requests meanwhile). With `churn` the share of the
//   MIG pods placed that have left, the cost is scaled by (1 - churn) x fullness^(4 x churn);
//   measured against the whole cost, half of it, none, fullness alone and churn alone in
//   docs/placement.md, "Stranded slices and churn". Where the model is heading for full (the
//   fullness it is heading for, fullness / FillReached(churn), reaches 1), requests will wait
//   for the slice: the scale is at least (1 - the whole-GPU share of the mix) x heading^20
//   (docs/placement.md, "Stranded slices where the GPUs are heading for full").
// - RoomUse: room for a profile is worth its value only as far as requests will take it while
//   it lasts. Where pods leave, the room a GPU keeps for a profile of which the model's GPUs
//   together keep far more than the requests to come will use (room for 1g on every half-used
//   GPU) is worth less than room that is scarce (a whole GPU): docs/placement.md, "Room that
//   requests will not use".
struct MigFleetSignals {
  struct Model {
    double fullness = 1;      // used / all memory slices of its GPUs
    int64_t free_slices = 0;  // memory slices no instance holds
    // Per profile: instances of it alone that the model's GPUs could still take, summed.
    std::array<int64_t, mig::kMaxProfiles> room{};
  };
  double churn = 0;  // 0 to 1
  // Per MIG rules (GpuMigModel::RulesIdentity).
  std::map<const void*, Model> models;

  // 1 when nothing has left; a model not in `models` counts as full. `whole_gpu_share`: the
  // share of the mix that takes a whole GPU of the model (MigWeights::WholeGpuShare); such
  // requests never use a stranded slice, and what partly used GPUs must do for them is fill.
  double StrandedScale(const void* rules, double whole_gpu_share = 0) const;
  // The exponent on the fullness a model is heading for in StrandedScale: steep, so that only a
  // model heading for full prices a stranded slice whole (8, 14 and 40 measured against 20 in
  // docs/placement.md).
  static constexpr double kHeadingFullnessExponent = 20;
  // Per profile of `model`, the factor on its room's value: 1 - churn x (1 - use), where use is
  // the instances of the profile expected before the model's free memory is taken (its share of
  // the mix x free slices / the mix's mean slices per instance) over the room for it, at most 1.
  // `shares`: MigWeights::Shares. All 1 when nothing has left or the model is unknown.
  std::vector<double> RoomUse(const mig::GpuMigModel& model,
                              const std::vector<double>& shares) const;
};

// The share of its long-run fill that GPUs filled from empty have reached when `churn` (0 to 1)
// of the pods placed have left, with pods arriving at a steady rate and living exponentially
// distributed lifetimes: after x mean lifetimes, 1 - e^-x of the long-run fill is resident and
// 1 - (1 - e^-x) / x of the pods placed have left. 0 when nothing has left, 1 at churn 1.
double FillReached(double churn);

// One scheduling decision's view of the mix: for each MIG model (by its rules), the share of
// future requests that would take each of its profiles — the prior and the observed mix
// combined as (strength x prior + counts) / (strength + total) — weighted by the size of the
// profile, so that placeability measures capacity rather than a count (measured against the
// count in docs/placement.md). The unit follows what the requests name: for memory
// (nvidia.com/gpumem), the GiB of the profile's slices, the same on every model of a mixed
// fleet; for a fraction of a GPU (nvidia.com/gpumem-percentage), the profile's fraction of its
// GPU, a whole GPU counted as kGpuAsGib; a mix of both, the blend by request counts. Built per
// decision, cached per model inside it; not shared between threads.
class MigWeights {
 public:
  // One whole GPU, for requests that name a fraction of it: only a mix of both kinds depends on
  // this scale.
  static constexpr double kGpuAsGib = 80.0;
  // What a stranded slice costs requests that name memory, in units of its value (Lookup).
  static constexpr double kStrandedMemoryWeight = 2.0;

  MigWeights(const MigDemandMix& mix, const MigPrior& prior, MigFleetSignals signals = {});
  // Per profile of the model: its share of future requests times its size in the units above,
  // times the part of its room that requests will take once pods leave (MigFleetSignals::
  // RoomUse): the value of one more placeable instance (mig::ArrangeGoal::profile_weights).
  const std::vector<double>& For(const mig::GpuMigModel& model) const {
    return Lookup(model).profile_weights;
  }
  // What one free slice that no profile of the mix can cover costs, in the same unit
  // (mig::ArrangeGoal::stranded): twice the unit for requests that name memory; for requests
  // for a fraction of a GPU the unit when it also leaves compute idle, and less when its
  // compute stays usable and requests for whole GPUs dominate (Lookup); both times the
  // stranded scale of the model (MigFleetSignals).
  const mig::StrandedValue& Stranded(const mig::GpuMigModel& model) const {
    return Lookup(model).stranded;
  }
  // The shares alone (they sum to at most 1).
  std::vector<double> Shares(const mig::GpuMigModel& model) const;
  // Of those shares, the part taken by profiles that fill the whole GPU (0 when none).
  static double WholeGpuShare(const mig::GpuMigModel& model, const std::vector<double>& shares);

 private:
  struct ModelWeights {
    std::vector<double> profile_weights;
    mig::StrandedValue stranded;
  };
  const ModelWeights& Lookup(const mig::GpuMigModel& model) const;

  std::vector<std::pair<MigDemandKey, double>> entries_;
  double total_ = 0;
  double memory_mass_ = 0;    // observed requests naming memory
  double fraction_mass_ = 0;  // observed requests naming a fraction of a GPU
  const MigPrior& prior_;
  MigFleetSignals signals_;
  mutable std::map<const void*, ModelWeights> cache_;  // by layout table (or model)
};

}  // namespace tessera::sched
