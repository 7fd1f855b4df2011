#include "core/sched/near_miss.h"

#include <algorithm>

#include "core/common/strings.h"
#include "core/sched/fit.h"

namespace tessera::sched {
namespace {

// Whether the pod's annotations let it use a MIG GPU of this type: the filter's own type and
// mode check. A hint about a model the pod may not use would only mislead.
bool MayUseKind(const PodPreferences& prefs, const std::string& type) {
  return ModelAllowed(ToUpper(type), model::kMigMode, prefs);
}

}  // namespace

std::optional<NearMiss> FindNearMiss(const mig::GpuMigModel& model,
                                     const mig::InstanceDemand& demand, const std::string& gpu_type,
                                     const std::string& container) {
  const std::vector<model::MigProfile>& profiles = model.profiles();
  int32_t nearest_mib = 0;
  for (size_t p = 0; p < profiles.size(); ++p) {
    const model::MigProfile& profile = profiles[p];
    if (!model.Allowed(static_cast<int>(p)) || profile.placements.empty()) continue;
    if (profile.memory_mib >= demand.mem_mib || profile.memory_mib <= 0) continue;
    if (demand.cores > 0 && profile.core < demand.cores) continue;  // less memory would not do
    const bool within =
        int64_t{demand.mem_mib} * 100 <= int64_t{profile.memory_mib} * (100 + kNearMissPercent);
    if (within) nearest_mib = std::max(nearest_mib, profile.memory_mib);
  }
  if (nearest_mib == 0) return std::nullopt;
  // Among profiles of that memory, the one a request of exactly that memory would take.
  const std::vector<int> at_nearest =
      model.EligibleProfiles(mig::InstanceDemand{nearest_mib, demand.cores});
  if (at_nearest.empty()) return std::nullopt;
  NearMiss miss;
  miss.container = container;
  miss.gpu_type = gpu_type;
  miss.requested_mib = demand.mem_mib;
  miss.nearest_profile = profiles[at_nearest.front()].name;
  miss.nearest_mib = nearest_mib;
  const std::vector<int> taken = model.EligibleProfiles(demand);
  if (!taken.empty()) {
    miss.taken_profile = profiles[taken.front()].name;
    miss.taken_mib = profiles[taken.front()].memory_mib;
  }
  return miss;
}

std::vector<MigGpuKind> MigGpuKindsOf(const state::ClusterState& state) {
  std::vector<MigGpuKind> kinds;
  kinds.reserve(state.mig_kinds().size());
  for (const auto& [type, kind] : state.mig_kinds()) kinds.push_back(MigGpuKind{type, kind.model});
  return kinds;
}

std::vector<NearMiss> FindNearMisses(const PodRequest& request, const PodPreferences& prefs,
                                     const std::vector<MigGpuKind>& kinds) {
  std::vector<NearMiss> misses;
  for (const MigGpuKind& kind : kinds) {
    if (!MayUseKind(prefs, kind.type)) continue;
    for (size_t slot = 0; slot < request.slots.size(); ++slot) {
      const ContainerRequest& k = request.slots[slot];
      if (k.Empty()) continue;
      // MemoryRequest's rule on a MIG GPU: gpumem, else the percentage of the largest profile.
      const int32_t mem = MemoryOf(k, kind.model.LargestProfileMemory());
      const std::string name = slot < request.names.size() ? request.names[slot] : std::string();
      if (auto miss = FindNearMiss(kind.model, mig::InstanceDemand{mem, k.cores}, kind.type, name))
        misses.push_back(std::move(*miss));
    }
  }
  return misses;
}

std::string FormatNearMiss(const NearMiss& miss) {
  std::string o;
  if (!miss.container.empty()) o = "container " + miss.container + " ";
  o += "asks " + std::to_string(miss.requested_mib) + " MiB, " +
       std::to_string(miss.requested_mib - miss.nearest_mib) + " MiB over " + miss.nearest_profile +
       " (" + std::to_string(miss.nearest_mib) + " MiB) on " + miss.gpu_type + ", so it ";
  o += miss.taken_profile.empty()
           ? std::string("fits no profile there")
           : "takes a " + miss.taken_profile + " (" + std::to_string(miss.taken_mib) + " MiB)";
  o += ": ask at most " + std::to_string(miss.nearest_mib) + " MiB to fit " + miss.nearest_profile;
  return o;
}

std::vector<std::string> FormatNearMisses(const std::vector<NearMiss>& misses) {
  std::vector<std::string> out;
  out.reserve(misses.size());
  for (const NearMiss& miss : misses) out.push_back(FormatNearMiss(miss));
  return out;
}

}  // namespace tessera::sched
