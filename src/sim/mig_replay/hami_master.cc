// hami-master: HAMi after PR #2855 (hami_master.h), docs/mig-replay.md "Policies".

#include "sim/mig_replay/hami_master.h"

#include "sim/mig_replay/baselines.h"

#include <algorithm>
#include <tuple>

namespace tessera::sim::mig_replay {
namespace {

int FreePlacements(const mig::GpuMigModel& gpu, const mig::Layout& layout, int profile) {
  int n = 0;
  for (const auto& placement : gpu.profiles()[profile].placements) {
    n += gpu.CanPlace(layout, profile, placement) ? 1 : 0;
  }
  return n;
}

// PR #2855's search: `search(remaining)` with nextMigRequest, rank and a shared budget.
class JointSearch {
 public:
  JointSearch(const mig::GpuMigModel& gpu, const mig::Layout& before_pod,
              const std::vector<int>& intended, int budget)
      : gpu_(gpu),
        intended_(intended),
        used_(before_pod),
        placed_(intended.size(), false),
        picks_(intended.size()),
        budget_(budget) {}

  HamiJointPlanResult Run() {
    HamiJointPlanResult result;
    if (Search(static_cast<int>(intended_.size()))) result.picks = picks_;
    result.steps = steps_;
    result.budget_exhausted = exhausted_;
    return result;
  }

 private:
  // nextMigRequest: the unplaced request whose profile has the fewest free legal placements,
  // ties to the first in request order; -1 when all are placed.
  std::pair<int, int> NextRequest() const {
    int best = -1;
    int best_profile = -1;
    int best_free = 0;
    for (size_t i = 0; i < intended_.size(); ++i) {
      if (placed_[i]) continue;
      const int profile = HamiMasterProfile(gpu_, used_, intended_[i]);
      const int free = profile < 0 ? 0 : FreePlacements(gpu_, used_, profile);
      if (best < 0 || free < best_free) {
        best = static_cast<int>(i);
        best_profile = profile;
        best_free = free;
      }
    }
    return {best, best_profile};
  }

  bool Search(int remaining) {  // NOLINT(misc-no-recursion): bounded by the request count
    if (remaining == 0) return true;
    const auto [idx, profile] = NextRequest();
    if (idx < 0) return false;
    placed_[idx] = true;
    if (profile >= 0) {
      for (const model::Placement& candidate : HamiMasterRank(gpu_, used_, profile)) {
        if (budget_ == 0) {
          exhausted_ = true;
          break;
        }
        --budget_;
        ++steps_;
        const mig::Layout before = used_;
        gpu_.Place(used_, profile, candidate);
        picks_[idx] = InstancePick{-1, profile, candidate};
        if (Search(remaining - 1)) return true;
        used_ = before;
      }
    }
    placed_[idx] = false;
    return false;
  }

  const mig::GpuMigModel& gpu_;
  const std::vector<int>& intended_;
  mig::Layout used_;
  std::vector<bool> placed_;
  std::vector<InstancePick> picks_;
  int budget_;
  int steps_ = 0;
  bool exhausted_ = false;
};

std::vector<mig::Layout> Layouts(const state::NodeState& node) {
  std::vector<mig::Layout> out;
  out.reserve(node.usage.size());
  for (const auto& u : node.usage) out.push_back(u.layout);
  return out;
}

// HAMi's Fit after PR #2724 on node `n`: each instance visits the GPUs in spread order; on a GPU
// the instances already chosen there and the new one are planned jointly on the GPU's occupancy
// before the pod; when that fails the next GPU is tried. Picks in instance order.
NodePicks PlaceJointly(const MigCluster& cluster, int n, int type, int budget) {
  const state::NodeState& node = *cluster.nodes()[n];
  const std::vector<mig::Layout> before = Layouts(node);
  const std::vector<int> order = HamiDeviceOrder(node, /*binpack=*/false);
  std::vector<std::vector<int>> intended(node.devices.size());  // per GPU, its instances
  std::vector<std::vector<InstancePick>> plans(node.devices.size());
  std::vector<std::pair<int, int>> where;  // per instance: GPU, index on it
  for (int i = 0; i < cluster.workload().types[type].count; ++i) {
    bool placed = false;
    for (int dev : order) {
      const int want = cluster.Intended(n, dev, type);
      if (want < 0) continue;
      std::vector<int> trial = intended[dev];
      trial.push_back(want);
      HamiJointPlanResult plan = HamiJointPlan(node.mig_models[dev], before[dev], trial, budget);
      if (!plan.picks) continue;
      intended[dev] = std::move(trial);
      plans[dev] = std::move(*plan.picks);
      where.emplace_back(dev, static_cast<int>(intended[dev].size()) - 1);
      placed = true;
      break;
    }
    if (!placed) return std::nullopt;
  }
  std::vector<InstancePick> picks;
  picks.reserve(where.size());
  for (const auto& [dev, k] : where) {
    InstancePick pick = plans[dev][k];
    pick.device = dev;
    picks.push_back(pick);
  }
  return picks;
}

// Node choice as hami-2.10 (HamiPolicy): HAMi's binpack node score before the pod, the highest
// wins, ties to the first node in fleet order.
class HamiMasterPolicy : public MigPolicy {
 public:
  explicit HamiMasterPolicy(int budget) : budget_(budget) {}
  std::string_view Name() const override { return kPolicyHamiMaster; }
  Result<replay::PlaceOutcome> Place(MigCluster& cluster, const int& type, const std::string& key,
                                     std::mt19937_64& /*rng*/) override {
    return PlaceOnBestHamiNode(cluster, key,
                               [&](int n) { return PlaceJointly(cluster, n, type, budget_); });
  }

 private:
  int budget_;
};

}  // namespace

int HamiMasterProfile(const mig::GpuMigModel& gpu, const mig::Layout& layout, int intended) {
  for (int profile : CoveringProfiles(gpu, intended)) {
    if (AnyPlacement(gpu, layout, profile)) return profile;
  }
  return -1;
}

std::vector<model::Placement> HamiMasterRank(const mig::GpuMigModel& gpu, const mig::Layout& layout,
                                             int profile) {
  struct Ranked {
    uint32_t run = 0;
    int left = 0;
    model::Placement placement;
  };
  std::vector<Ranked> ranked;
  for (const auto& placement : gpu.profiles()[profile].placements) {
    if (!gpu.CanPlace(layout, profile, placement)) continue;
    mig::Layout after = layout;
    gpu.Place(after, profile, placement);
    ranked.push_back(Ranked{gpu.LargestFreeRun(after), LegalPlacementsLeft(gpu, after), placement});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return std::tuple(b.run, b.left, a.placement.start) <
           std::tuple(a.run, a.left, b.placement.start);
  });
  std::vector<model::Placement> out;
  out.reserve(ranked.size());
  for (const Ranked& r : ranked) out.push_back(r.placement);
  return out;
}

HamiJointPlanResult HamiJointPlan(const mig::GpuMigModel& gpu, const mig::Layout& before_pod,
                                  const std::vector<int>& intended_profiles, int budget) {
  return JointSearch(gpu, before_pod, intended_profiles, budget).Run();
}

std::unique_ptr<MigPolicy> MakeHamiMasterPolicy(int budget) {
  return std::make_unique<HamiMasterPolicy>(budget);
}

}  // namespace tessera::sim::mig_replay
