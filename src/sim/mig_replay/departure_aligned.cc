#include "sim/mig_replay/departure_aligned.h"

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "sim/mig_replay/protocol.h"

namespace tessera::sim::mig_replay {
namespace {

class DepartureAlignedPolicy : public MigPolicy {
 public:
  DepartureAlignedPolicy(const std::vector<Arrival>& arrivals,
                         const std::vector<uint32_t>* preferred_span, KeptSlices kept)
      : arrivals_(arrivals), preferred_span_(preferred_span), kept_(std::move(kept)) {}
  std::string_view Name() const override {
    return preferred_span_ != nullptr ? kOfflineLpSpans : kOfflineDepartureAligned;
  }

  Result<replay::PlaceOutcome> Place(MigCluster& cluster, const int& type, const std::string& key,
                                     std::mt19937_64& /*rng*/) override {
    const std::optional<size_t> index = ArrivalIndex(key);
    if (!index || *index >= arrivals_.size()) return replay::PlaceOutcome::kRefused;
    const double now = arrivals_[*index].time;
    const double leaves = now + arrivals_[*index].lifetime;
    const uint32_t span = preferred_span_ != nullptr && *index < preferred_span_->size()
                              ? (*preferred_span_)[*index]
                              : 0;
    std::optional<NodeChoice> best;
    for (int n = 0; n < cluster.node_count(); ++n) {
      std::optional<NodeChoice> choice = OnNode(cluster, n, type, now, leaves, span);
      if (choice && (!best || choice->Better(*best))) best = std::move(choice);
    }
    if (!best) return replay::PlaceOutcome::kRefused;
    cluster.Commit(key, best->node, best->picks);
    return replay::PlaceOutcome::kPlaced;
  }

 private:
  struct NodeChoice {
    int node = -1;
    std::vector<InstancePick> picks;
    double extension = 0;  // summed over the instances
    int off_span = 0;      // instances not at the preferred span
    int free_slices = 0;   // of the GPUs chosen, before each instance
    bool Better(const NodeChoice& other) const {
      return std::tie(extension, off_span, free_slices) <
             std::tie(other.extension, other.off_span, other.free_slices);
    }
  };

  // When the GPU empties if nothing more comes: its last resident's departure, or `now`.
  double BusyUntil(const state::NodeState& node, size_t device, double now) const {
    double until = now;
    for (const state::MigInstance& instance : node.instances[device]) {
      const std::optional<size_t> resident = ArrivalIndex(instance.pod_key);
      if (!resident || *resident >= arrivals_.size()) continue;
      until = std::max(until, arrivals_[*resident].time + arrivals_[*resident].lifetime);
    }
    return until;
  }

  // Every instance of the pod on node `n`, one at a time, each on the GPU it extends the least
  // (then where it takes `span`, then the fullest, then the first); its placement is `span` or
  // leaves the largest free run.
  std::optional<NodeChoice> OnNode(const MigCluster& cluster, int n, int type, double now,
                                   double leaves, uint32_t span) const {
    const state::NodeState& node = *cluster.nodes()[n];
    std::vector<mig::Layout> layouts;
    std::vector<double> busy_until;
    std::vector<uint32_t> kept;
    for (size_t d = 0; d < node.usage.size(); ++d) {
      layouts.push_back(node.usage[d].layout);
      busy_until.push_back(BusyUntil(node, d, now));
      kept.push_back(kept_ ? kept_(n, static_cast<int>(d), now, leaves) : 0);
    }
    NodeChoice choice;
    choice.node = n;
    for (int i = 0; i < cluster.workload().types[type].count; ++i) {
      std::optional<InstancePick> chosen;
      double chosen_extension = 0;
      bool chosen_off_span = false;
      int chosen_free = 0;
      for (int dev = 0; dev < static_cast<int>(layouts.size()); ++dev) {
        const int intended = cluster.Intended(n, dev, type);
        if (intended < 0) continue;
        const mig::GpuMigModel& gpu = node.mig_models[dev];
        const uint32_t keep = kept[static_cast<size_t>(dev)];
        std::optional<InstancePick> pick;
        if (span != 0 && (span & keep) == 0) pick = AtSpan(gpu, layouts[dev], intended, span);
        const bool off_span = span != 0 && !pick;
        if (!pick) pick = LargestFreeRunCandidate(gpu, layouts[dev], intended, keep);
        if (!pick) continue;
        const double extension = std::max(0.0, leaves - busy_until[dev]);
        const int free = FreeSlices(gpu, layouts[dev]);
        const auto key = std::make_tuple(extension, off_span, free);
        if (!chosen || key < std::make_tuple(chosen_extension, chosen_off_span, chosen_free)) {
          chosen = pick;
          chosen->device = dev;
          chosen_extension = extension;
          chosen_off_span = off_span;
          chosen_free = free;
        }
      }
      if (!chosen) return std::nullopt;
      const auto dev = static_cast<size_t>(chosen->device);
      node.mig_models[dev].Place(layouts[dev], chosen->profile, chosen->placement);
      busy_until[dev] = std::max(busy_until[dev], leaves);
      choice.picks.push_back(*chosen);
      choice.extension += chosen_extension;
      choice.off_span += chosen_off_span ? 1 : 0;
      choice.free_slices += chosen_free;
    }
    return choice;
  }

  const std::vector<Arrival>& arrivals_;
  const std::vector<uint32_t>* preferred_span_;
  KeptSlices kept_;
};

}  // namespace

std::unique_ptr<MigPolicy> MakeDepartureAlignedPolicy(const std::vector<Arrival>& arrivals,
                                                      const std::vector<uint32_t>* preferred_span,
                                                      KeptSlices kept) {
  return std::make_unique<DepartureAlignedPolicy>(arrivals, preferred_span, std::move(kept));
}

}  // namespace tessera::sim::mig_replay
