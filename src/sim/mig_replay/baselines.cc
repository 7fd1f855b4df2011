// The baseline policies: each reads the NodeState layouts of the shared ClusterState, chooses
// node, GPU, profile and placement by its published rule, and commits a PodReservation.

#include <limits>

#include "sim/mig_replay/baselines.h"

namespace tessera::sim::mig_replay {
namespace {

std::vector<mig::Layout> Layouts(const state::NodeState& node) {
  std::vector<mig::Layout> out;
  out.reserve(node.usage.size());
  for (const auto& u : node.usage) out.push_back(u.layout);
  return out;
}

// Places every instance of a pod on node `n`, one at a time, each on the first GPU of `order`
// where `choose` finds a profile and placement (instances of one pod may share a GPU).
template <class Choose>
NodePicks PlaceInOrder(const MigCluster& cluster, int n, int type, const std::vector<int>& order,
                       Choose choose) {
  const state::NodeState& node = *cluster.nodes()[n];
  std::vector<mig::Layout> layouts = Layouts(node);
  std::vector<InstancePick> picks;
  for (int i = 0; i < cluster.workload().types[type].count; ++i) {
    bool placed = false;
    for (int dev : order) {
      const int intended = cluster.Intended(n, dev, type);
      if (intended < 0) continue;
      std::optional<InstancePick> pick = choose(node.mig_models[dev], layouts[dev], intended);
      if (!pick) continue;
      pick->device = dev;
      node.mig_models[dev].Place(layouts[dev], pick->profile, pick->placement);
      picks.push_back(*pick);
      placed = true;
      break;
    }
    if (!placed) return std::nullopt;
  }
  return picks;
}

std::vector<int> IndexOrder(const state::NodeState& node) {
  std::vector<int> order(node.devices.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int>(d);
  return order;
}

// HAMi 2.10 (hami-protocol.md 5-7) and HAMi after PR #2855: every node where the pod fits is
// scored by HAMi's binpack node score (usage before the pod; its default node policy), the
// highest wins and ties go to the first node in fleet order (HAMi's own tie order is goroutine
// completion order). Inside a node GPUs are visited in HAMi's default "spread" order.
class HamiPolicy : public MigPolicy {
 public:
  explicit HamiPolicy(bool largest_free_run) : largest_free_run_(largest_free_run) {}
  std::string_view Name() const override {
    return largest_free_run_ ? kPolicyLargestFreeRun : kPolicyHami210;
  }
  Result<replay::PlaceOutcome> Place(MigCluster& cluster, const int& type, const std::string& key,
                                     std::mt19937_64& /*rng*/) override {
    return PlaceOnBestHamiNode(cluster, key, [&](int n) {
      const state::NodeState& node = *cluster.nodes()[n];
      return PlaceInOrder(cluster, n, type, HamiDeviceOrder(node, /*binpack=*/false),
                          [&](const auto& gpu, const auto& layout, int intended) {
                            return largest_free_run_
                                       ? LargestFreeRunCandidate(gpu, layout, intended)
                                       : HamiCandidate(gpu, layout, intended);
                          });
    });
  }

 private:
  bool largest_free_run_;
};

// The NVIDIA DRA driver's DynamicMIG under kube-scheduler's allocator and DAS/instaslice: the
// exact profile asked for, first node, first GPU, first legal placement in list order
// (peers.md sections 3 and 5).
class FirstFitPolicy : public MigPolicy {
 public:
  std::string_view Name() const override { return kPolicyFirstFit; }
  Result<replay::PlaceOutcome> Place(MigCluster& cluster, const int& type, const std::string& key,
                                     std::mt19937_64& /*rng*/) override {
    for (int n = 0; n < cluster.node_count(); ++n) {
      NodePicks picks = PlaceInOrder(cluster, n, type, IndexOrder(*cluster.nodes()[n]),
                                     [](const auto& gpu, const auto& layout, int intended) {
                                       std::optional<InstancePick> pick;
                                       if (auto p = LowestStart(gpu, layout, intended)) {
                                         pick = InstancePick{-1, intended, *p};
                                       }
                                       return pick;
                                     });
      if (!picks) continue;
      cluster.Commit(key, n, *picks);
      return replay::PlaceOutcome::kPlaced;
    }
    return replay::PlaceOutcome::kRefused;
  }
};

// Classic best fit on memory slices: the exact profile, on the GPU with the fewest free memory
// slices that can take it (across the cluster), lowest start; ties go to the first GPU in fleet
// order. A multi-instance pod takes, per instance, the fullest fitting GPU of a node, and the
// node whose chosen GPUs had the fewest free slices wins.
class BestFitPolicy : public MigPolicy {
 public:
  std::string_view Name() const override { return kPolicyBestFit; }
  Result<replay::PlaceOutcome> Place(MigCluster& cluster, const int& type, const std::string& key,
                                     std::mt19937_64& /*rng*/) override {
    int best = -1;
    int best_free = std::numeric_limits<int>::max();
    std::vector<InstancePick> best_picks;
    for (int n = 0; n < cluster.node_count(); ++n) {
      const state::NodeState& node = *cluster.nodes()[n];
      std::vector<mig::Layout> layouts = Layouts(node);
      std::vector<InstancePick> picks;
      int free_total = 0;
      for (int i = 0; i < cluster.workload().types[type].count; ++i) {
        int chosen = -1;
        int chosen_free = 0;
        model::Placement chosen_placement;
        for (int dev = 0; dev < static_cast<int>(node.devices.size()); ++dev) {
          const int intended = cluster.Intended(n, dev, type);
          if (intended < 0) continue;
          const auto placement = LowestStart(node.mig_models[dev], layouts[dev], intended);
          if (!placement) continue;
          const int free = FreeSlices(node.mig_models[dev], layouts[dev]);
          if (chosen < 0 || free < chosen_free) {
            chosen = dev;
            chosen_free = free;
            chosen_placement = *placement;
          }
        }
        if (chosen < 0) {
          picks.clear();
          break;
        }
        const int profile = cluster.Intended(n, chosen, type);
        node.mig_models[chosen].Place(layouts[chosen], profile, chosen_placement);
        picks.push_back(InstancePick{chosen, profile, chosen_placement});
        free_total += chosen_free;
      }
      if (picks.empty()) continue;
      if (best < 0 || free_total < best_free) {
        best = n;
        best_free = free_total;
        best_picks = std::move(picks);
      }
    }
    if (best < 0) return replay::PlaceOutcome::kRefused;
    cluster.Commit(key, best, best_picks);
    return replay::PlaceOutcome::kPlaced;
  }
};

}  // namespace

replay::PlaceOutcome PlaceOnBestHamiNode(MigCluster& cluster, const std::string& key,
                                         const std::function<NodePicks(int node)>& place_on) {
  int best = -1;
  float best_score = 0;
  std::vector<InstancePick> best_picks;
  for (int n = 0; n < cluster.node_count(); ++n) {
    NodePicks picks = place_on(n);
    if (!picks) continue;
    const float score = HamiNodeScore(*cluster.nodes()[n]);
    if (best < 0 || score > best_score) {
      best = n;
      best_score = score;
      best_picks = std::move(*picks);
    }
  }
  if (best < 0) return replay::PlaceOutcome::kRefused;
  cluster.Commit(key, best, best_picks);
  return replay::PlaceOutcome::kPlaced;
}

std::unique_ptr<MigPolicy> MakeHamiPolicy(bool largest_free_run) {
  return std::make_unique<HamiPolicy>(largest_free_run);
}
std::unique_ptr<MigPolicy> MakeFirstFitPolicy() { return std::make_unique<FirstFitPolicy>(); }
std::unique_ptr<MigPolicy> MakeBestFitPolicy() { return std::make_unique<BestFitPolicy>(); }

}  // namespace tessera::sim::mig_replay
