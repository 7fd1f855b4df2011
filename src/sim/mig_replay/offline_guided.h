#pragma once

// A schedule that knows the future, to bracket the offline optimum from below where the
// placement bound brackets it from above ("offline-lp-guided", docs/mig-replay.md "References
// and bounds"): the placement LP's served optimum says how much of each request of the stream to
// accept (PlacementLp::accept_share); the schedule turns away every request the LP accepts less
// than a threshold of (or, where its branch and bound found one, follows its whole acceptances),
// and lets a placer (tessera, three baselines, and in steady state two that know departures,
// departure_aligned.h) place the rest as they come, keeping what fits. Every such run is a
// feasible schedule of the stream, so the best of them over a few thresholds (tessera alone is
// the threshold 0), placers, orders (at saturation also largest first) and a local search is at
// most the offline optimum: optimum within [offline-lp-guided, placement-bound]. In steady state
// the pattern schedule (pattern_schedule.h), built GPU by GPU and filled where its plan leaves
// room, is searched as one more placer.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/model/pod.h"
#include "core/sched/node_policy.h"
#include "sim/mig_replay/pattern_schedule.h"
#include "sim/mig_replay/protocol.h"

namespace tessera::sim::mig_replay {

inline constexpr std::string_view kOfflineLpGuided = "offline-lp-guided";

// The thresholds tried: 0 is the placer alone.
const std::vector<double>& OfflineGuideThresholds();

// How hard the schedule searches.
struct OfflineGuideOptions {
  // The policies that place what the LP lets in, each searched on its own: tessera first, and
  // those that leave the most scattered room (best-fit) or pack in order (first-fit,
  // hami-master), since which packing suits a stream varies.
  std::vector<std::string> placers = {"tessera",     "best-fit",          "first-fit",
                                      "hami-master", "departure-aligned", "lp-spans"};
  // The local search tries the first this many requests of the stream (a run each), so the
  // streams of fleets the placement bound runs on (a few hundred requests) are searched whole;
  // 0: no local search.
  size_t search_requests = 2000;
  // The local search runs from this many of a placer's best runs (orders and thresholds): on one
  // node of 8 A100s four narrowed the bracket by 0.5 points at steady-0.9 and 1.2, at 3 times
  // the time (docs/mig-replay.md, "Which end is loose").
  size_t search_starts = 4;
  // In steady state, the pattern schedule (pattern_schedule.h) is one more placer; 0 rounds:
  // none.
  PatternOptions patterns;
};

// Places through `inner` only the requests whose LP share is at least `threshold`; the others,
// and keys that are not a stream's (ArrivalIndex), are refused.
class ThresholdPlacer : public Placer {
 public:
  ThresholdPlacer(Placer& inner, const std::vector<double>& accept_share, double threshold)
      : inner_(inner), accept_share_(accept_share), threshold_(threshold) {}
  bool Place(const std::string& key, int type) override;
  void Release(const std::string& key) override { inner_.Release(key); }
  Snapshot Measure() const override { return inner_.Measure(); }
  int64_t ServedSlices(const std::string& key, int type) const override {
    return inner_.ServedSlices(key, type);
  }
  int64_t TotalSlices() const override { return inner_.TotalSlices(); }
  std::optional<Error> error() const override { return inner_.error(); }

 private:
  Placer& inner_;
  const std::vector<double>& accept_share_;
  double threshold_;
};

// The best feasible schedule found for `arrivals` on `nodes`: the placement LP of protocol (a)
// (`steady` false; the whole stream, no early stop) or (b) (after `warmup`), then each of
// the options' placers (tessera under `node_policies`) behind a ThresholdPlacer for each
// OfflineGuideThresholds, in stream order and at saturation largest first, then one pass of
// local search from that placer's best. The metrics of the run that served the most; an error
// names a policy's mistake.
Result<RunMetrics> RunOfflineLpGuided(const std::vector<model::Node>& nodes,
                                      const Workload& workload,
                                      const std::vector<Arrival>& arrivals, size_t warmup,
                                      bool steady,
                                      std::span<const sched::NodePolicy> node_policies = {},
                                      const OfflineGuideOptions& options = {});

}  // namespace tessera::sim::mig_replay
