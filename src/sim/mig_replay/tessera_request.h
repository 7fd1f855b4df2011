#pragma once

// How the benchmark asks tessera's production scheduler for a request type: as a user would.
// A share becomes nvidia.com/gpumem-percentage and nvidia.com/gpucores, chosen so that on every
// GPU model of the fleet the scheduler's smallest eligible profile (GpuMigModel::EligibleProfiles:
// memory is that percentage of the largest allowed profile, core share at least gpucores) is the
// type's intended profile (IntendedProfile); a memory request becomes nvidia.com/gpumem.

#include <cstdint>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/mig/layout.h"
#include "core/model/pod.h"
#include "sim/mig_replay/demand.h"

namespace tessera::sim::mig_replay {

struct TesseraMigRequest {
  int32_t mem_percent = 0;  // 1..100, or 0 when mem_mib is given
  int32_t cores = 0;        // 0 (not given) or 1..100
  int32_t mem_mib = 0;      // > 0: nvidia.com/gpumem in MiB instead of a percentage
  bool operator==(const TesseraMigRequest&) const = default;
};

// The smallest eligible profile on `gpu` for a request, or -1 (what the scheduler would try
// first).
int SmallestEligibleProfile(const mig::GpuMigModel& gpu, const TesseraMigRequest& request);

// For a memory request, gpumem = memory_mib, checked to yield the intended profile on every GPU
// of `gpus`. For a share, the first (mem_percent, cores), in increasing order of both, that
// yields it; an error naming the type when none does (e.g. 2/7 of a GPU on a fleet that mixes
// 7-slice models with the 4-slice RTX PRO 6000).
Result<TesseraMigRequest> ResolveTesseraRequest(const std::vector<const mig::GpuMigModel*>& gpus,
                                                const RequestType& type);

// The pod the `tessera` policy hands the scheduler for the replay's pod `key`: MIG mode, one
// container asking `count` instances as `request` says, owned by a ReplicaSet (a Deployment's
// pod, which the defragmentation planner may move; nothing else reads the owner).
model::Pod TesseraMigPod(const std::string& key, int32_t count, const TesseraMigRequest& request);

}  // namespace tessera::sim::mig_replay
