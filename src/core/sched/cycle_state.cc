#include "core/sched/cycle_state.h"

#include "core/common/strings.h"
#include "core/model/annotations.h"

namespace tessera::sched {

ParsedPod ParsePod(const model::Pod& pod, const config::NvidiaConfig& nvidia,
                   const PolicyDefaults& defaults) {
  ParsedPod parsed;
  parsed.request = DerivePodRequest(pod, nvidia);
  parsed.cpu_milli = model::PodCpuRequestMilli(pod);
  if (const std::string* t = pod.Annotation(std::string(model::annotations::kUseGpuType))) {
    parsed.demand_type = Join(SplitTrimmed(*t, ','), ",");
  }
  if (parsed.request.ok() && parsed.request->HasGpu()) {
    parsed.prefs = ParsePreferences(pod, defaults);
    if (parsed.prefs->ok()) {
      parsed.vgpu_mode = parsed.prefs->value().vgpu_mode;
      return parsed;
    }
  }
  parsed.vgpu_mode = ParseVgpuMode(pod);  // only where the preferences did not give it
  return parsed;
}

bool PreFilter(const model::Pod& pod, const state::QuotaBook& quotas, ParsedPod* parsed,
               Decision* decision) {
  if (!parsed->request.ok()) {
    decision->outcome = Outcome::kInvalidRequest;
    decision->message = parsed->request.error().message;
    return false;
  }
  const PodRequest& request = parsed->request.value();
  decision->container_names = request.names;
  if (!request.HasGpu()) {
    // Not ours: kube-scheduler places it on its own (HAMi's pass-through).
    decision->outcome = Outcome::kPassthrough;
    decision->containers.resize(request.slots.size());
    return false;
  }
  if (!parsed->prefs->ok()) {
    decision->outcome = Outcome::kInvalidRequest;
    decision->message = parsed->prefs->error().message;
    return false;
  }
  parsed->prefs->value().quota = quotas.HeadroomFor(pod.ns);
  return true;
}

namespace {

// The only container that asks for GPUs, when it asks for exactly one; else nullptr.
const ContainerRequest* SingleGpuContainer(const PodRequest& request) {
  const ContainerRequest* single = nullptr;
  for (const ContainerRequest& k : request.slots) {
    if (k.Empty()) continue;
    single = single == nullptr && k.nums == 1 ? &k : nullptr;
    if (single == nullptr) break;
  }
  return single;
}

}  // namespace

CycleState::CycleState(const PodRequest& request, const PodPreferences& prefs, int64_t cpu_milli,
                       const DemandMix& mix, const MigDemandMix& mig_mix,
                       const PolicyDefaults& defaults, const MigFleetSignals& fleet_signals)
    : request_(request),
      prefs_(prefs),
      cpu_milli_(cpu_milli),
      mix_(mix),
      mig_mix_(mig_mix),
      defaults_(defaults),
      fleet_signals_(fleet_signals),
      tessera_nodes_(prefs.node_policy.counts_fragmentation()),
      fragmentation_only_(prefs.node_policy.fragmentation_only()),
      by_fragmentation_(tessera_nodes_ && !mix.Target().empty()),
      single_(SingleGpuContainer(request)),
      rank_gpus_(prefs.gpu_policy.tessera && !mix.Target().empty() && single_ != nullptr &&
                 !MigOnly(prefs.vgpu_mode)),
      prepared_(mix.Target()),
      // MIG GPUs are placed to keep the most placeability for the demand mix (docs/placement.md).
      mig_weights_(mig_mix, defaults.mig_prior, fleet_signals_),
      mig_goal_storage_{&mig_weights_, defaults.mig_allow_larger_profiles, &mig_cache_,
                        &mig_buffers_},
      goal_(prefs.gpu_policy.tessera ? &mig_goal_storage_ : nullptr),
      cacheable_(prefs.use_uuids.empty() && prefs.nouse_uuids.empty()) {
  if (!rank_gpus_) single_ = nullptr;
  // The bounds floor fragmentation's steps: they rank nodes only where nothing else counts.
  const bool bounded = fragmentation_only_;
  if (by_fragmentation_ && bounded) rank_bound_ = RankBound(request, mix.Target());
  mig_goal_storage_.admits_open_mig_gpus = AdmitsOpenMigGpus(prefs);
  mig_goal_storage_.plans = &mig_plans_;
  // Only where the plan's drop is the node's rank, and nodes all in MIG mode are planned.
  if (bounded && goal_ != nullptr && MayUseMig(prefs.vgpu_mode) &&
      ModeAdmits(prefs.vgpu_mode, model::kMigMode)) {
    mig_rank_bound_ = MigRankBound(request, *goal_);
  }
}

}  // namespace tessera::sched
