#include "sim/replay/defrag_policy.h"

#include <charconv>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "core/sched/defrag.h"
#include "core/sched/node_policy.h"
#include "sim/replay/cluster.h"
#include "sim/replay/tessera_policy.h"

namespace tessera::sim::replay {
namespace {

constexpr std::string_view kPrefix = "tessera+defrag-";

class TesseraDefragPolicy : public Policy {
 public:
  TesseraDefragPolicy(int max_evictions, std::unique_ptr<Policy> inner)
      : inner_(inner ? std::move(inner) : MakeTesseraPolicy()),
        name_(TesseraDefragPolicyName(max_evictions)),
        defaults_(TesseraReplayDefaults(sched::NodePolicy::Tessera())) {
    limits_.max_evictions = max_evictions;
    limits_.raise_placeability = false;
    // Every refused pod gets a plan: a small search each, as a controller's round would make.
    limits_.max_evaluations = 200;
  }

  std::string_view Name() const override { return name_; }
  int64_t evictions() const override { return evictions_; }
  std::vector<int> TakeOtherChangedNodes() override { return std::exchange(changed_, {}); }

  Result<PlaceOutcome> Place(ReplayCluster& cluster, const TracePod& pod, const std::string& key,
                             std::mt19937_64& rng) override {
    Result<PlaceOutcome> outcome = inner_->Place(cluster, pod, key, rng);
    if (!outcome.ok() || *outcome == PlaceOutcome::kPlaced) {
      if (outcome.ok()) Remember(key, pod);
      return outcome;
    }
    if (pod.num_gpu == 0 || !Defragment(cluster, pod, key)) return PlaceOutcome::kRefused;
    Remember(key, pod);
    return PlaceOutcome::kPlaced;
  }

 private:
  void Remember(const std::string& key, const TracePod& pod) {
    trace_pods_.emplace(key, pod);
    if (pod.num_gpu > 0) specs_.push_back(TesseraReplayPod(pod, key));
  }

  bool Defragment(ReplayCluster& cluster, const TracePod& pod, const std::string& key) {
    const std::vector<model::Pod> pending{TesseraReplayPod(pod, key)};
    const sched::DefragPlan plan = sched::PlanDefrag(cluster.placement_state().state(), pending,
                                                     specs_, defaults_, {}, {}, limits_);
    if (plan.admitted.empty() || plan.admitted.front().evicted.empty()) return false;
    // Carried out in the plan's order; undone, newest first, at the first the filters refuse.
    std::vector<std::pair<std::string, state::PodReservation>> done;  // evicted pod, as it was
    auto undo = [&] {
      for (auto it = done.rbegin(); it != done.rend(); ++it) {
        const TracePod& moved = trace_pods_.at(it->first);
        (void)cluster.Release(it->first, moved);
        (void)cluster.Adopt(moved, std::move(it->second));
      }
    };
    for (const sched::DefragStep& step : plan.steps) {
      const TracePod& moved = trace_pods_.at(step.pod);
      Result<state::PodReservation> was = cluster.Release(step.pod, moved);
      if (!was.ok()) {
        undo();
        return false;
      }
      if (!cluster.Adopt(moved, step.replaced_reservation).ok()) {
        (void)cluster.Adopt(moved, std::move(*was));
        undo();
        return false;
      }
      done.emplace_back(step.pod, std::move(*was));
    }
    if (!cluster.Adopt(pod, plan.admitted.front().reservation).ok()) {
      undo();
      return false;
    }
    evictions_ += static_cast<int64_t>(plan.steps.size());
    std::set<int> nodes;
    for (const sched::DefragStep& step : plan.steps) {
      nodes.insert(cluster.placement_state().NodeIndex(step.node));
      nodes.insert(cluster.placement_state().NodeIndex(step.replaced_node));
    }
    changed_.insert(changed_.end(), nodes.begin(), nodes.end());
    return true;
  }

  std::unique_ptr<Policy> inner_;
  std::string name_;
  sched::PolicyDefaults defaults_;
  sched::DefragLimits limits_;
  std::map<std::string, TracePod> trace_pods_;  // every placed pod, by key
  std::vector<model::Pod> specs_;               // the placed GPU pods' specs, for the planner
  std::vector<int> changed_;
  int64_t evictions_ = 0;
};

}  // namespace

std::unique_ptr<Policy> MakeTesseraDefragPolicy(int max_evictions, std::unique_ptr<Policy> inner) {
  return std::make_unique<TesseraDefragPolicy>(max_evictions, std::move(inner));
}

std::string TesseraDefragPolicyName(int max_evictions) {
  return std::string(kPrefix) + std::to_string(max_evictions);
}

int TesseraDefragEvictionsOf(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return 0;
  int n = 0;
  const char* begin = name.data() + kPrefix.size();
  const char* end = name.data() + name.size();
  auto [ptr, ec] = std::from_chars(begin, end, n);
  if (ec != std::errc() || ptr != end || n < 1 || n > 32) return 0;
  return n;
}

}  // namespace tessera::sim::replay
