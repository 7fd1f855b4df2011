#pragma once

// A schedule that knows the future, to bracket the offline optimum from below where the
// placement bound brackets it from above ("offline-lp-guided", docs/mig-replay.md "References
// and bounds"): the placement LP's served optimum says how much of each request of the stream to
// accept (PlacementLp::accept_share); the schedule turns away every request the LP accepts less
// than a threshold of, and lets tessera place the rest as they come, keeping what fits. Every
// such run is a feasible schedule of the stream, so the best of them over a few thresholds
// (tessera itself is the threshold 0), orders (at saturation also largest first) and a local
// search is at most the offline optimum: optimum within [offline-lp-guided, placement-bound].

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/model/pod.h"
#include "core/sched/node_policy.h"
#include "sim/mig_replay/protocol.h"

namespace tessera::sim::mig_replay {

inline constexpr std::string_view kOfflineLpGuided = "offline-lp-guided";

// The thresholds tried: 0 is tessera alone.
const std::vector<double>& OfflineGuideThresholds();

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
// (`steady` false; the whole stream, no early stop) or (b) (after `warmup`), then tessera
// (under `node_policies`) behind a ThresholdPlacer for each OfflineGuideThresholds, in stream
// order and at saturation largest first, then one pass of local search from the best. The
// metrics of the run that served the most; an error names a policy's mistake.
Result<RunMetrics> RunOfflineLpGuided(const std::vector<model::Node>& nodes,
                                      const Workload& workload,
                                      const std::vector<Arrival>& arrivals, size_t warmup,
                                      bool steady,
                                      std::span<const sched::NodePolicy> node_policies = {});

}  // namespace tessera::sim::mig_replay
