#pragma once

// An offline placer for the steady-state schedule that knows the future (offline_guided.h): it
// knows when every pod of the stream leaves, and puts each instance where it keeps a GPU busy
// the least past the time the GPU would empty anyway (then on the fullest such GPU). GPUs whose
// pods leave together empty together, and an empty GPU is what a whole-GPU request needs: on
// one node of 8 A100s, the schedules that bound tessera's headroom from below lost most against
// the placement bound on whole-GPU requests (docs/mig-replay.md, "How much is left"). Not a
// policy of the benchmark: no scheduler knows when a pod will leave.

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "sim/mig_replay/demand.h"
#include "sim/mig_replay/policy.h"

namespace tessera::sim::mig_replay {

inline constexpr std::string_view kOfflineDepartureAligned = "departure-aligned";
// The same, where an instance goes at the span the placement LP's served optimum puts most of its
// request at (PlacementLp::preferred_span) when it can, on the GPU it keeps busy the least.
inline constexpr std::string_view kOfflineLpSpans = "lp-spans";

// Whether `placer` names one of these two (they need the steady state's departures).
inline bool KnowsDepartures(std::string_view placer) {
  return placer == kOfflineDepartureAligned || placer == kOfflineLpSpans;
}

// The memory slices of GPU (node, device) that a pod resident over [from, to) must leave free
// (another pod is known to need them then).
using KeptSlices = std::function<uint32_t(int node, int device, double from, double to)>;

// Places the pods ArrivalKey(i) of `arrivals` (steady state: each leaves at time + lifetime);
// a key that is not one of the stream's is refused. With `preferred_span` (per arrival, a
// memory-slice mask; 0: none), a GPU where the instance can take that span comes first among
// those it keeps busy equally long. With `kept`, no instance goes on the slices it names.
std::unique_ptr<MigPolicy> MakeDepartureAlignedPolicy(
    const std::vector<Arrival>& arrivals, const std::vector<uint32_t>* preferred_span = nullptr,
    KeptSlices kept = {});

}  // namespace tessera::sim::mig_replay
