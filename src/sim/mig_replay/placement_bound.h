#pragma once

// A tighter bound for small fleets ("placement-bound", docs/mig-replay.md "References and
// bounds"): a time-indexed LP that keeps the MIG placements. Each instance of a request may sit,
// in part, at the legal placements of its intended profile on the GPUs (x in [0, 1] per
// placement, at most the request's count in all); at every instant, on every GPU, the instances
// resident there cover each memory slice at most once and hold at most the most intended slices
// the GPU can hold (UsableCapacity's knapsack). In steady state an accepted request keeps one
// placement for its whole lifetime, so x is constant over its interval, and it is only there if
// it was placed on arrival. GPUs with the same rules and intended profiles are interchangeable:
// the LP over them has a symmetric optimum, so it is solved once per class of GPUs with the
// class's GPU count as the capacity of each slice (the same value, far fewer variables).
// On short streams (at most 200 requests) a bounded branch and bound then makes each request's
// acceptance whole (all its instances or none; the placements stay fractional) and keeps the
// best bound it proves. Relaxed away: integral placements, instance limits, media engines,
// compute slices, and that a pod's instances share a node. A policy may give a larger covering
// profile; its span contains a legal placement of the intended profile on every catalog model
// (tested), and where it would not, the covering placement's span is offered too (PlacementSpans),
// so the LP stays a relaxation. Protocols (a) and (b) only: a pending request's start time is not
// an event of the stream.

#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/mig_replay/cluster.h"
#include "sim/mig_replay/demand.h"
#include "sim/mig_replay/protocol.h"

namespace tessera::sim::mig_replay {

inline constexpr std::string_view kPlacementBound = "placement-bound";

// The memory-slice masks an instance meant to get `intended` may be counted at on `gpu`: the
// intended profile's placements, and any covering profile's placement whose span holds none of
// them. Not empty when the intended profile has placements.
std::vector<uint32_t> PlacementSpans(const mig::GpuMigModel& gpu, int intended);

// The LP's optima (raw, before rounding or taking the smaller of another bound); -1: failed.
struct PlacementLp {
  double served = -1;    // saturation: slices; steady: slices summed over measured instants
  double accepted = -1;  // saturation: requests of the stream; steady: measured ones
  // Per request of the stream, the share of it the served LP's optimum accepts (0 to 1; 0 where
  // it has no placement at all): what an offline schedule may follow (offline_guided.h).
  std::vector<double> accept_share;
  // Per request: the memory-slice mask (PlacementSpans) of the span the served optimum puts the
  // most of it at, on any class of GPUs; 0 where it has none.
  std::vector<uint32_t> preferred_span;
  // Per request, 0 or 1: the best schedule of whole acceptances the branch and bound found
  // (placements still fractional); empty where it found none or did not run.
  std::vector<double> whole_accept;
};

// Protocol (a): every request of the stream may be resident together, at one instant.
PlacementLp SaturationPlacementLp(const MigCluster& cluster, const std::vector<Arrival>& arrivals);
// Protocol (b): served is the sum, over the arrivals after `warmup`, of the intended slices held
// just before each (what RunSteadyState averages), so it bounds served_ratio x measured x all
// slices.
PlacementLp SteadyPlacementLp(const MigCluster& cluster, const std::vector<Arrival>& arrivals,
                              size_t warmup);

// The bound as a run's metrics; each figure is the smaller of the LP's and upper-bound's.
RunMetrics PlacementBoundSaturation(const MigCluster& cluster,
                                    const std::vector<Arrival>& arrivals);
RunMetrics PlacementBoundSteadyState(const MigCluster& cluster,
                                     const std::vector<Arrival>& arrivals, size_t warmup);

}  // namespace tessera::sim::mig_replay
