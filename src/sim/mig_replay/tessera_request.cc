#include "sim/mig_replay/tessera_request.h"

#include "core/model/annotations.h"
#include "sim/replay/placement_state.h"

namespace tessera::sim::mig_replay {

int SmallestEligibleProfile(const mig::GpuMigModel& gpu, const TesseraMigRequest& request) {
  // sched/fit.cc MemoryRequest: a percentage of a MIG GPU is of its largest allowed profile.
  const int64_t mem = request.mem_mib > 0 ? request.mem_mib
                                          : static_cast<int64_t>(gpu.LargestProfileMemory()) *
                                                request.mem_percent / 100;
  const std::vector<int> eligible =
      gpu.EligibleProfiles(mig::InstanceDemand{static_cast<int32_t>(mem), request.cores});
  return eligible.empty() ? -1 : eligible.front();
}

Result<TesseraMigRequest> ResolveTesseraRequest(const std::vector<const mig::GpuMigModel*>& gpus,
                                                const RequestType& type) {
  std::vector<int> intended;
  intended.reserve(gpus.size());
  for (const mig::GpuMigModel* gpu : gpus) intended.push_back(IntendedProfile(*gpu, type));
  const auto selects_intended = [&](const TesseraMigRequest& request) {
    for (size_t i = 0; i < gpus.size(); ++i) {
      if (SmallestEligibleProfile(*gpus[i], request) != intended[i]) return false;
    }
    return true;
  };
  if (type.memory_mib > 0) {
    const TesseraMigRequest request{0, 0, type.memory_mib};
    if (selects_intended(request)) return request;
    return Error{"request " + type.label + ": nvidia.com/gpumem " +
                 std::to_string(type.memory_mib) +
                 " does not select its intended profile on every GPU model of the fleet"};
  }
  for (int32_t mem_percent = 1; mem_percent <= 100; ++mem_percent) {
    for (int32_t cores = 0; cores <= 100; ++cores) {
      const TesseraMigRequest request{mem_percent, cores, 0};
      if (selects_intended(request)) return request;
    }
  }
  return Error{"request " + type.label + " (" + std::to_string(type.share_num) + "/" +
               std::to_string(type.share_den) +
               " of a GPU): no nvidia.com/gpumem-percentage and nvidia.com/gpucores select its "
               "intended profile on every GPU model of the fleet"};
}

model::Pod TesseraMigPod(const std::string& key, int32_t count, const TesseraMigRequest& request) {
  model::Pod pod = replay::ReplayPod(key);
  pod.annotations[std::string(model::annotations::kVgpuMode)] = "mig";
  pod.controller_kind = "ReplicaSet";
  model::Container c;
  c.name = "main";
  c.limits["nvidia.com/gpu"] = std::to_string(count);
  if (request.mem_mib > 0) {
    c.limits["nvidia.com/gpumem"] = std::to_string(request.mem_mib);
  } else {
    c.limits["nvidia.com/gpumem-percentage"] = std::to_string(request.mem_percent);
  }
  if (request.cores > 0) c.limits["nvidia.com/gpucores"] = std::to_string(request.cores);
  pod.containers.push_back(std::move(c));
  return pod;
}

}  // namespace tessera::sim::mig_replay
