#include "core/sched/fit.h"

#include <algorithm>
#include <array>
#include <bit>
#include <optional>

#include "core/common/small_buffer.h"
#include "core/common/strings.h"
#include "core/sched/device_order.h"
#include "core/sched/mig_placement.h"
#include "core/sched/reasons.h"
#include "core/sched/topology.h"

namespace tessera::sched {
namespace {

// A MIG instance this pod has been granted on a GPU so far in the pass.
struct PendingInstance {
  mig::InstanceDemand demand;
  int slot = 0;
  int position = 0;  // index in the slot's assignment list
};

// `type` is the device's type, upper-cased (NodeState::types_upper).
bool TypeAllowed(const model::GpuDevice& d, const std::string& type, const PodPreferences& p) {
  // Without type filters the type string is not read: on a pass over thousands of nodes it
  // would be a cache miss per node (a decision that fits nowhere cost 25% more for it).
  if (p.use_types.empty() && p.nouse_types.empty()) return ModeAdmits(p.vgpu_mode, d.mode);
  return ModelAllowed(type, d.mode, p);
}

bool UuidAllowed(const model::GpuDevice& d, const PodPreferences& p) {
  if (!p.use_uuids.empty() &&
      std::find(p.use_uuids.begin(), p.use_uuids.end(), d.uuid) == p.use_uuids.end()) {
    return false;
  }
  return std::find(p.nouse_uuids.begin(), p.nouse_uuids.end(), d.uuid) == p.nouse_uuids.end();
}

// Checks 1-3 and 5 of HAMi's Fit: properties of the device and the pod, not of usage.
std::optional<GpuCheck> StaticFailure(const state::NodeState& node, int dev,
                                      const PodPreferences& p) {
  const model::GpuDevice& d = node.devices[dev];
  if (!d.healthy || !node.usage[dev].Trusted()) return GpuCheck::kHealth;
  if (node.cordoned.count(d.uuid) > 0) return GpuCheck::kCordoned;
  if (!TypeAllowed(d, node.types_upper[dev], p)) return GpuCheck::kType;
  if (!UuidAllowed(d, p)) return GpuCheck::kUuid;
  return std::nullopt;
}

// The usage checks a GPU fails, one bit per GpuCheck.
using CheckSet = uint32_t;
constexpr CheckSet Bit(GpuCheck check) { return CheckSet{1} << static_cast<unsigned>(check); }

// Checks 6-14 of HAMi's Fit: what is left of the GPU (`u`) against what the container asks.
// `mig`: the GPU is in MIG mode. `every` off stops at the first failure (the filter); on makes
// them all (explain). Every check rejects more as the usage grows (MayFit relies on it).
CheckSet UsageFailures(const model::GpuDevice& d, bool mig, const state::DeviceUsage& u,
                       const ContainerRequest& request, int32_t memreq, bool mutex, bool every) {
  CheckSet failed = 0;
  // Records a failure; true where the caller stops at it.
  const auto fail = [&](GpuCheck check) {
    failed |= Bit(check);
    return !every;
  };
  // Check 6: on a MIG GPU the placements, not the split count, decide.
  if (!mig && d.count <= u.used && fail(GpuCheck::kTimeSlices)) return failed;
  if (mutex && u.used != 0 && fail(GpuCheck::kMutex)) return failed;
  if (static_cast<int64_t>(d.total_mem_mib) - u.used_mem < memreq && fail(GpuCheck::kMemory)) {
    return failed;
  }
  // Checks 12-14 are about time-shared compute. On a MIG GPU each instance has its own
  // compute slices: the requested cores choose the profile, and the profiles' rounded core
  // shares may add up past 100, so they must not block a placement that physically fits.
  if (!mig) {
    if (d.total_cores - u.used_cores < request.cores && fail(GpuCheck::kCores)) return failed;
    if (d.total_cores == 100 && request.cores == 100 && u.used > 0 &&
        fail(GpuCheck::kExclusiveCores)) {
      return failed;
    }
    if (d.total_cores != 0 && u.used_cores == d.total_cores && request.cores == 0 &&
        fail(GpuCheck::kComputeUnits)) {
      return failed;
    }
  }
  return failed;
}

// The first usage check the GPU fails; nullopt when it passes them.
std::optional<GpuCheck> UsageReject(const model::GpuDevice& d, bool mig,
                                    const state::DeviceUsage& u, const ContainerRequest& request,
                                    int32_t memreq, bool mutex) {
  const CheckSet failed = UsageFailures(d, mig, u, request, memreq, mutex, /*every=*/false);
  if (failed == 0) return std::nullopt;
  return static_cast<GpuCheck>(std::countr_zero(failed));
}

// Why `demands` cannot all be placed on MIG GPU `dev`: the slices instances tessera did not
// create hold, when without them they could be, else HAMi's CardMigTopologyInfeasible. Only
// called on a failure, and arranges again only on a GPU that has foreign instances.
GpuCheck MigInfeasibleCheck(const state::NodeState& node, int dev,
                            const std::vector<mig::InstanceDemand>& demands) {
  if (node.usage[dev].foreign_slices != 0 &&
      node.mig_models[dev].Arrange(state::ClusterState::LayoutWithoutForeign(node, dev), demands)) {
    return GpuCheck::kMigForeign;
  }
  return GpuCheck::kMigPlacement;
}

// The pod's quota use if it got `slots` (plus `extra` for `extra_slot`, when given), collapsed as
// HAMi's quota counts it (state::QuotaCollapse), per GPU of the node.
state::QuotaUse SlotsQuotaUse(const SlotAssignments& slots, int num_init,
                              const DeviceAssignment* extra = nullptr, int extra_slot = -1) {
  state::QuotaCollapse collapse;
  for (size_t slot = 0; slot < slots.size(); ++slot) {
    for (const auto& a : slots[slot]) {
      collapse.Add(a.device, static_cast<int>(slot) < num_init, a.mem, a.cores);
    }
  }
  if (extra != nullptr)
    collapse.Add(extra->device, extra_slot < num_init, extra->mem, extra->cores);
  return collapse.Total();
}

class PodFitter {
 public:
  PodFitter(const state::NodeState& node, const PodRequest& request, const PodPreferences& prefs,
            const std::vector<double>* device_rank)
      : node_(node), request_(request), prefs_(prefs), device_rank_(device_rank) {
    const size_t n = node.devices.size();
    slots_.assign(request.slots.size(), {});
    for (size_t slot = 0; slot < request.slots.size(); ++slot) {
      if (!request.slots[slot].Empty()) last_slot_ = static_cast<int>(slot);
    }
    any_mig_device_ = std::any_of(node.devices.begin(), node.devices.end(),
                                  [](const model::GpuDevice& d) { return d.IsMig(); });
    if (any_mig_device_) {  // MIG working state (indexed by device; untouched otherwise)
      mig_usage_ = node.usage;
      pending_.assign(n, {});
      arrangement_.assign(n, {});
    }
    mig_request_ = any_mig_device_ && MayUseMig(prefs.vgpu_mode);
  }

  bool mig_request() const { return mig_request_; }

  // Container-by-container pass, as HAMi's scoreNode runs it.
  bool Run(NodeStatus* failure) {
    for (size_t slot = 0; slot < request_.slots.size(); ++slot) {
      const ContainerRequest& k = request_.slots[slot];
      if (k.Empty()) continue;
      if (!FitContainer(static_cast<int>(slot), k, failure)) return false;
    }
    Finalize();
    return true;
  }

  SlotAssignments TakeSlots() { return std::move(slots_); }

 private:
  const state::DeviceUsage& Usage(int dev, bool init) const {
    if (node_.devices[dev].IsMig()) return mig_usage_[dev];
    // app_usage_ is made when an app container first takes shares for the ones after it.
    return init || app_usage_.empty() ? node_.usage[dev] : app_usage_[dev];
  }

  // Re-derives a MIG GPU's working usage from its base and the pod's arrangement on it.
  void RefreshMigUsage(int dev) {
    state::DeviceUsage u = node_.usage[dev];
    const auto& profiles = node_.mig_models[dev].profiles();
    for (const auto& choice : arrangement_[dev]) {
      u.used += 1;
      u.used_mem += profiles[choice.profile].memory_mib;
      u.used_cores += profiles[choice.profile].core;
      node_.mig_models[dev].Place(u.layout, choice.profile, choice.placement);
    }
    mig_usage_[dev] = u;
  }

  // Check 15 for MIG: can the pod's instances on this GPU, plus one more, all be placed?
  std::optional<std::vector<mig::InstanceChoice>> TryMig(int dev, const mig::InstanceDemand& d,
                                                         GpuCheck* why) {
    std::vector<mig::InstanceDemand> demands;
    for (const auto& p : pending_[dev]) demands.push_back(p.demand);
    demands.push_back(d);
    auto arranged = node_.mig_models[dev].Arrange(node_.usage[dev].layout, demands);
    if (!arranged) *why = MigInfeasibleCheck(node_, dev, demands);
    return arranged;
  }

  bool FitContainer(int slot, const ContainerRequest& request, NodeStatus* failure) {
    const bool init = request_.IsInit(slot);
    const int n = static_cast<int>(node_.devices.size());
    if (!mig_request_ && request.nums > n) {
      *failure = NodeStatus::OfNode(Reason::kNodeInsufficientDevice);
      return false;
    }
    SmallBuffer<float, 16> scores(n, 0.0F);
    SmallBuffer<int32_t, 16> used(n, 0);
    for (int i = 0; i < n; ++i) {
      scores[i] = DeviceScore(node_.devices[i], Usage(i, init), request, prefs_.weights);
      used[i] = Usage(i, init).used;
    }
    SmallBuffer<int, 16> order(n, 0);
    OrderDevices(node_.devices, scores.span(), used.span(), prefs_, order.span());
    if (device_rank_ != nullptr && request.nums == 1) {
      // Fit tries the end first: put the lowest rank last, HAMi's order among equals.
      StableSortIndices(order.span(),
                        [&](int a, int b) { return (*device_rank_)[a] > (*device_rank_)[b]; });
    }
    const bool topology = prefs_.gpu_policy.topology_aware && !mig_request_;
    const bool mutex = prefs_.gpu_policy.mutex;
    ReasonCounts reasons;
    std::vector<DeviceAssignment>& chosen = slots_[slot];
    const size_t chosen_before = chosen.size();
    std::vector<int> mig_pushed;  // devices where this container added a pending instance
    int32_t remaining = request.nums;
    int prev_numa = -1;
    bool first_numa = true;

    auto rollback_run = [&]() {
      chosen.resize(chosen_before);
      for (auto it = mig_pushed.rbegin(); it != mig_pushed.rend(); ++it) {
        pending_[*it].pop_back();
      }
      for (int dev : mig_pushed) {
        RecomputeArrangement(dev);
      }
      mig_pushed.clear();
    };

    // Check 4 with numa-bind: a GPU on another NUMA node starts a new run; a partial run is
    // given back and counted as NumaNotFit.
    auto numa_check = [&](const model::GpuDevice& d) {
      if (!prefs_.numa_bind || (!first_numa && prev_numa == d.numa)) return;
      if (remaining != request.nums) {
        reasons[Reason::kNumaNotFit] += static_cast<int>(chosen.size() - chosen_before);
      }
      rollback_run();
      remaining = request.nums;
      prev_numa = d.numa;
      first_numa = false;
    };

    for (int i = n - 1; i >= 0; --i) {
      const int dev = order[i];
      const model::GpuDevice& d = node_.devices[dev];
      if (auto failed = StaticFailure(node_, dev, prefs_)) {
        // In HAMi's order the NUMA check comes before the UUID check, after the others.
        if (*failed == GpuCheck::kUuid) numa_check(d);
        reasons[ReasonFor(*failed)]++;
        continue;
      }
      numa_check(d);
      const state::DeviceUsage& u = Usage(dev, init);
      const bool mig = d.IsMig();
      const int32_t memreq = MemoryRequest(node_, dev, mig, request);
      // Check 10: the namespace's quota, counting what this pod has taken so far in the pass.
      if (prefs_.quota) {
        const DeviceAssignment candidate{dev, memreq, request.cores, -1, {}};
        if (!prefs_.quota->Admits(SlotsQuotaUse(slots_, request_.num_init, &candidate, slot))) {
          reasons[Reason::kResourceQuotaNotFit]++;
          continue;
        }
      }
      if (auto failed = UsageReject(d, mig, u, request, memreq, mutex)) {
        reasons[ReasonFor(*failed)]++;
        continue;
      }
      if (mig) {
        mig::InstanceDemand demand{memreq, request.cores};
        GpuCheck why = GpuCheck::kMigPlacement;
        auto arranged = TryMig(dev, demand, &why);
        if (!arranged) {
          reasons[ReasonFor(why)]++;
          continue;
        }
        pending_[dev].push_back(PendingInstance{demand, slot, static_cast<int>(chosen.size())});
        arrangement_[dev] = std::move(*arranged);
        RefreshMigUsage(dev);
        mig_pushed.push_back(dev);
        chosen.push_back(DeviceAssignment{dev, memreq, request.cores, -1, {}});
        if (--remaining == 0) break;
        ++i;  // revisit the same GPU: several instances may share it
        continue;
      }
      chosen.push_back(DeviceAssignment{dev, memreq, request.cores, -1, {}});
      if (!topology && --remaining == 0) break;
    }

    const int32_t got = static_cast<int32_t>(chosen.size() - chosen_before);
    if (topology && got >= request.nums) {
      std::vector<int> candidates;
      for (size_t c = chosen_before; c < chosen.size(); ++c) candidates.push_back(chosen[c].device);
      std::vector<int> picked = PickByTopology(node_, candidates, request.nums);
      std::vector<DeviceAssignment> kept(chosen.begin(), chosen.begin() + chosen_before);
      for (int dev : picked) {
        for (size_t c = chosen_before; c < chosen.size(); ++c) {
          if (chosen[c].device == dev) kept.push_back(chosen[c]);
        }
      }
      chosen = std::move(kept);
      remaining = 0;
    }
    if (remaining > 0 || (topology && got < request.nums)) {
      if (got > 0) reasons[Reason::kAllocatedCardsInsufficientRequest] = got;
      if (reasons.empty()) {
        *failure = NodeStatus::OfNode(Reason::kNodeInsufficientDevice);
      } else {
        failure->counts = reasons;
        failure->devices = n;
      }
      return false;
    }
    // Shares of non-MIG GPUs count for the app containers that follow (init containers each
    // start from the node as it was: they run one after another).
    if (!init && slot < last_slot_) {
      if (app_usage_.empty()) app_usage_ = node_.usage;
      for (size_t c = chosen_before; c < chosen.size(); ++c) {
        const DeviceAssignment& a = chosen[c];
        if (node_.devices[a.device].IsMig()) continue;
        app_usage_[a.device].used += 1;
        app_usage_[a.device].used_mem += a.mem;
        app_usage_[a.device].used_cores += a.cores;
      }
    }
    return true;
  }

  void RecomputeArrangement(int dev) {
    std::vector<mig::InstanceDemand> demands;
    for (const auto& p : pending_[dev]) demands.push_back(p.demand);
    auto arranged = node_.mig_models[dev].Arrange(node_.usage[dev].layout, demands);
    arrangement_[dev] = arranged ? std::move(*arranged) : std::vector<mig::InstanceChoice>{};
    RefreshMigUsage(dev);
  }

  // Writes each MIG instance's final profile and placement into its assignment.
  void Finalize() {
    for (size_t dev = 0; dev < pending_.size(); ++dev) {
      const auto& profiles = node_.mig_models[dev].profiles();
      for (size_t j = 0; j < pending_[dev].size(); ++j) {
        const PendingInstance& p = pending_[dev][j];
        const mig::InstanceChoice& c = arrangement_[dev][j];
        DeviceAssignment& a = slots_[p.slot][p.position];
        a.mig_profile = c.profile;
        a.placement = c.placement;
        a.mem = profiles[c.profile].memory_mib;
        a.cores = profiles[c.profile].core;
      }
    }
  }

  const state::NodeState& node_;
  const PodRequest& request_;
  const PodPreferences& prefs_;
  const std::vector<double>* device_rank_;
  int last_slot_ = -1;                         // the last slot that asks for GPUs
  std::vector<state::DeviceUsage> app_usage_;  // empty until an app container takes shares
  std::vector<state::DeviceUsage> mig_usage_;
  std::vector<std::vector<PendingInstance>> pending_;
  std::vector<std::vector<mig::InstanceChoice>> arrangement_;
  SlotAssignments slots_;
  bool any_mig_device_ = false;
  bool mig_request_ = false;
};

}  // namespace

float NodeScore(const state::NodeState& node, const SlotAssignments& slots) {
  int64_t tasks = 0, cores = 0, mem = 0;
  for (const auto& slot : slots) {
    for (const auto& a : slot) {
      tasks += 1;
      cores += a.cores;
      mem += a.mem;
    }
  }
  return NodeScoreAdding(node, tasks, cores, mem);
}

float NodeScoreAdding(const state::NodeState& node, int64_t tasks, int64_t added_cores,
                      int64_t added_mem) {
  state::NodeTotals sums;
  if (node.summaries_current) {
    sums = node.totals;
  } else {
    for (size_t i = 0; i < node.devices.size(); ++i) {
      sums.used += node.usage[i].used;
      sums.used_cores += node.usage[i].used_cores;
      sums.used_mem += node.usage[i].used_mem;
      sums.slots += node.devices[i].count;
      sums.cores += node.devices[i].total_cores;
      sums.mem += node.devices[i].total_mem_mib;
    }
  }
  const int64_t used = sums.used + tasks, total = sums.slots;
  const int64_t cores = sums.used_cores + added_cores, total_cores = sums.cores;
  const int64_t mem = sums.used_mem + added_mem, total_mem = sums.mem;
  if (total == 0 || total_cores == 0 || total_mem == 0) return 0;
  return 10.0F * (static_cast<float>(used) / static_cast<float>(total) +
                  static_cast<float>(cores) / static_cast<float>(total_cores) +
                  static_cast<float>(mem) / static_cast<float>(total_mem));
}

bool MayFit(const state::NodeState& node, const PodRequest& request, const PodPreferences& prefs) {
  if (!node.usable()) return false;
  // MIG GPUs: the placements decide (and a joint search may succeed where the greedy pass
  // fails), so there is no cheap answer.
  if (node.any_mig) return true;
  const int n = static_cast<int>(node.devices.size());
  for (const ContainerRequest& k : request.slots) {
    if (k.Empty()) continue;
    if (k.nums > n) return false;
    // No GPU has the memory asked for (a GPU needs it free to pass, UsageReject).
    if (k.mem_mib > 0 && node.max_free_mem < k.mem_mib) return false;
    // Every container takes distinct GPUs that pass the checks against at least the node's
    // current usage (app containers see more usage, which only rejects more GPUs).
    int32_t passing = 0;
    for (int dev = 0; dev < n && passing < k.nums; ++dev) {
      const model::GpuDevice& d = node.devices[dev];
      const state::DeviceUsage& u = node.usage[dev];
      const int32_t memreq = MemoryRequest(node, dev, false, k);
      // Free memory first (it rejects most GPUs), then every check, as Fit makes them.
      if (static_cast<int64_t>(d.total_mem_mib) - u.used_mem < memreq ||
          UsageReject(d, false, u, k, memreq, prefs.gpu_policy.mutex) ||
          StaticFailure(node, dev, prefs)) {
        continue;
      }
      ++passing;
    }
    if (passing < k.nums) return false;
  }
  return true;
}

namespace {

// What the pod is accounted once placed (a MIG instance counts its profile's memory, more than
// the request that HAMi's check 10 used) must fit the quota too.
void CheckQuotaOfPlacement(const state::NodeState& node, const PodRequest& request,
                           const PodPreferences& prefs, NodeFit* fit) {
  if (!fit->fits || !prefs.quota) return;
  if (prefs.quota->Admits(SlotsQuotaUse(fit->slots, request.num_init))) return;
  int gpus = 0;
  for (const auto& slot : fit->slots) gpus += static_cast<int>(slot.size());
  fit->fits = false;
  fit->mig_planned = false;
  fit->status = NodeStatus{};
  fit->status.counts[Reason::kResourceQuotaNotFit] = gpus;
  fit->status.devices = static_cast<int32_t>(node.devices.size());
  fit->slots.clear();
}

// FitPodOnNode without the quota check of the placement.
NodeFit FitPodOnNodeUnchecked(const state::NodeState& node, const PodRequest& request,
                              const PodPreferences& prefs, const std::vector<double>* device_rank,
                              const MigGoal* mig_goal, bool with_slots) {
  NodeFit fit;
  if (!node.usable()) {
    fit.status = NodeStatus::Unusable(node.unusable_reason);
    return fit;
  }
  // The demand-aware plan needs none of HAMi's pass's working state (PodFitter::mig_request()).
  if (mig_goal != nullptr && node.any_mig && MayUseMig(prefs.vgpu_mode) &&
      OnlyMigDevicesAdmitted(node, prefs)) {
    // The quota check reads the assignments.
    const bool slots = with_slots || prefs.quota.has_value();
    if (auto plan = PlanMigPlacement(node, request, prefs, mig_goal, slots)) {
      fit.fits = true;
      fit.mig_planned = true;
      fit.mig_drop = plan->placeability_drop;
      fit.slots = std::move(plan->slots);
      fit.slots_omitted = !slots;
      fit.score = NodeScoreAdding(node, plan->instances, plan->cores, plan->assigned_mem);
      return fit;
    }
    // The plan is exact, so HAMi's pass cannot fit either. It would say why, in HAMi's words,
    // but that costs as much as the plan and matters only when no node fits.
    fit.status.code = NodeStatus::Code::kNotWorkedOut;
    return fit;
  }
  PodFitter fitter(node, request, prefs, device_rank);
  NodeStatus failure;
  if (fitter.Run(&failure)) {
    fit.fits = true;
    fit.slots = fitter.TakeSlots();
  } else if (fitter.mig_request()) {
    // The container-by-container pass is greedy across GPUs; the joint search is exact.
    if (auto joint = JointMigSearch(node, request, prefs)) {
      fit.fits = true;
      fit.slots = std::move(*joint);
    }
  }
  if (!fit.fits) {
    fit.status = std::move(failure);
    return fit;
  }
  fit.score = NodeScore(node, fit.slots);
  return fit;
}

}  // namespace

int32_t MemoryOf(const ContainerRequest& k, int64_t gpu_mem_mib) {
  if (k.mem_mib > 0) return k.mem_mib;
  return static_cast<int32_t>(gpu_mem_mib * k.mem_percent / 100);
}

int32_t MemoryRequest(const state::NodeState& node, int dev, bool mig, const ContainerRequest& k) {
  if (k.mem_mib > 0) return k.mem_mib;
  // On a MIG GPU "100%" means the largest instance, not the raw device memory (which no
  // profile reaches, hami-protocol.md 13.2).
  return MemoryOf(k, mig ? int64_t{node.mig_models[dev].LargestProfileMemory()}
                         : int64_t{node.devices[dev].total_mem_mib});
}

bool ModelAllowed(std::string_view upper_type, std::string_view mode, const PodPreferences& p) {
  const auto named = [&](const std::string& t) { return upper_type.find(t) != std::string::npos; };
  if (!p.use_types.empty() && std::none_of(p.use_types.begin(), p.use_types.end(), named)) {
    return false;
  }
  if (std::any_of(p.nouse_types.begin(), p.nouse_types.end(), named)) return false;
  // HAMi's direction: the annotation value must contain the device's mode.
  return ModeAdmits(p.vgpu_mode, mode);
}

Reason ReasonFor(GpuCheck check) {
  switch (check) {
    case GpuCheck::kHealth:
      return Reason::kCardNotHealth;
    case GpuCheck::kCordoned:
      return Reason::kCardCordoned;
    case GpuCheck::kType:
      return Reason::kCardTypeMismatch;
    case GpuCheck::kUuid:
      return Reason::kCardUuidMismatch;
    case GpuCheck::kQuota:
      return Reason::kResourceQuotaNotFit;
    case GpuCheck::kTimeSlices:
      return Reason::kCardTimeSlicingExhausted;
    case GpuCheck::kMutex:
    case GpuCheck::kExclusiveCores:
      return Reason::kExclusiveDeviceAllocateConflict;
    case GpuCheck::kMemory:
      return Reason::kCardInsufficientMemory;
    case GpuCheck::kCores:
      return Reason::kCardInsufficientCore;
    case GpuCheck::kComputeUnits:
      return Reason::kCardComputeUnitsExhausted;
    case GpuCheck::kMigPlacement:
      return Reason::kCardMigTopologyInfeasible;
    case GpuCheck::kMigForeign:
      return Reason::kCardMigSlicesHeldByForeignInstances;
  }
  return Reason::kCardNotHealth;
}

std::vector<GpuCheck> FailedGpuChecks(const state::NodeState& node, int dev,
                                      const ContainerRequest& request, const PodPreferences& prefs,
                                      bool every) {
  if (auto failed = StaticFailure(node, dev, prefs)) return {*failed};
  std::vector<GpuCheck> checks;
  const model::GpuDevice& d = node.devices[dev];
  const bool mig = d.IsMig();
  const int32_t memreq = MemoryRequest(node, dev, mig, request);
  if (prefs.quota) {
    const DeviceAssignment candidate{dev, memreq, request.cores, -1, {}};
    if (!prefs.quota->Admits(SlotsQuotaUse({}, 0, &candidate, 0))) {
      checks.push_back(GpuCheck::kQuota);
      if (!every) return checks;
    }
  }
  const state::DeviceUsage& u = node.usage[dev];
  const CheckSet usage = UsageFailures(d, mig, u, request, memreq, prefs.gpu_policy.mutex, every);
  for (auto check = GpuCheck::kTimeSlices; check <= GpuCheck::kComputeUnits;
       check = static_cast<GpuCheck>(static_cast<int>(check) + 1)) {
    if ((usage & Bit(check)) != 0) checks.push_back(check);
  }
  if (!checks.empty()) return checks;
  const std::vector<mig::InstanceDemand> one{mig::InstanceDemand{memreq, request.cores}};
  if (mig && !node.mig_models[dev].Arrange(u.layout, one)) {
    checks.push_back(MigInfeasibleCheck(node, dev, one));
  }
  return checks;
}

std::vector<std::string> GpuReasons(const state::NodeState& node, const ContainerRequest& request,
                                    const PodPreferences& prefs) {
  std::vector<std::string> reasons(node.devices.size());
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const std::vector<GpuCheck> failed =
        FailedGpuChecks(node, static_cast<int>(i), request, prefs, /*every=*/false);
    if (!failed.empty()) reasons[i] = std::string(ReasonOf(failed.front()));
  }
  return reasons;
}

state::QuotaUse QuotaUseOfSlots(const SlotAssignments& slots, int num_init) {
  return SlotsQuotaUse(slots, num_init);
}

NodeFit FitPodOnNode(const state::NodeState& node, const PodRequest& request,
                     const PodPreferences& prefs, const std::vector<double>* device_rank,
                     const MigGoal* mig_goal, bool with_slots) {
  NodeFit fit = FitPodOnNodeUnchecked(node, request, prefs, device_rank, mig_goal, with_slots);
  CheckQuotaOfPlacement(node, request, prefs, &fit);
  return fit;
}

bool ResolvableByPreemption(const state::NodeState& node, const PodRequest& request,
                            const PodPreferences& prefs) {
  if (!node.usable()) return false;
  // The node as it would be with every pod evicted: the same devices, nothing in use.
  state::NodeState empty = node;
  empty.summaries_current = false;  // its usage is edited below
  for (state::DeviceUsage& u : empty.usage) u = state::DeviceUsage{};
  // Instances tessera did not create stay: no eviction removes them.
  for (size_t dev = 0; dev < empty.instances.size(); ++dev) {
    auto& held = empty.instances[dev];
    std::erase_if(held, [](const state::MigInstance& m) { return !m.foreign; });
    if (!held.empty()) state::ClusterState::RebuildLayout(empty, static_cast<int>(dev));
  }
  empty.pods.clear();
  empty.cpu_used_milli = 0;
  PodPreferences without_quota = prefs;
  without_quota.quota.reset();
  return FitPodOnNode(empty, request, without_quota).fits;
}

bool NamesAnyGpuOf(const PodPreferences& prefs, const state::NodeState& node) {
  if (prefs.use_uuids.empty() && prefs.nouse_uuids.empty()) return false;
  // Every UUID of the pod's has a bit the node's GPUs lack: none is one of the node's (a filter
  // of Bloom's kind: a UUID whose bits the node has may still be none of its GPUs').
  if (node.gpu_uuid_bits != 0 &&
      prefs.named_uuid_bits.size() == prefs.use_uuids.size() + prefs.nouse_uuids.size() &&
      std::none_of(prefs.named_uuid_bits.begin(), prefs.named_uuid_bits.end(),
                   [&](uint64_t bits) { return (bits & ~node.gpu_uuid_bits) == 0; })) {
    return false;
  }
  for (const model::GpuDevice& d : node.devices) {
    if (std::find(prefs.use_uuids.begin(), prefs.use_uuids.end(), d.uuid) !=
            prefs.use_uuids.end() ||
        std::find(prefs.nouse_uuids.begin(), prefs.nouse_uuids.end(), d.uuid) !=
            prefs.nouse_uuids.end()) {
      return true;
    }
  }
  return false;
}

}  // namespace tessera::sched
