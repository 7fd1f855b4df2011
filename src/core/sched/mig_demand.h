#pragma once

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

// How long a stranded slice stays lost, as the cluster shows it (MigWeights::Stranded scales its
// cost by For). A slice no profile of the mix can cover is lost until an instance beside it
// leaves: for good where pods do not leave (at saturation the full cost steers instances so
// that none is stranded), for a while where they do, and then only as far as the model's GPUs
// are full (free memory elsewhere serves the requests meanwhile). With `churn` the share of the
// MIG pods placed that have left, the cost is scaled by (1 - churn) x fullness^(4 x churn);
// measured against the whole cost, half of it, none, fullness alone and churn alone in
// docs/placement.md, "Stranded slices and churn".
struct MigStrandedScale {
  double churn = 0;  // 0 to 1
  // Per MIG rules (GpuMigModel::RulesIdentity): used / all memory slices of its GPUs.
  std::map<const void*, double> fullness;
  // 1 when nothing has left; a model not in `fullness` counts as full.
  double For(const void* rules) const;
};

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

  MigWeights(const MigDemandMix& mix, const MigPrior& prior, MigStrandedScale scale = {});
  // Per profile of the model: its share of future requests times its size in the units above,
  // the value of one more placeable instance (mig::ArrangeGoal::profile_weights).
  const std::vector<double>& For(const mig::GpuMigModel& model) const {
    return Lookup(model).profile_weights;
  }
  // What one free slice that no profile of the mix can cover costs, in the same unit
  // (mig::ArrangeGoal::stranded): twice the unit for requests that name memory; for requests
  // for a fraction of a GPU the unit when it also leaves compute idle, and less when its
  // compute stays usable and requests for whole GPUs dominate (Lookup); both times the
  // stranded scale of the model (MigStrandedScale).
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
  MigStrandedScale scale_;
  mutable std::map<const void*, ModelWeights> cache_;  // by layout table (or model)
};

}  // namespace tessera::sched
