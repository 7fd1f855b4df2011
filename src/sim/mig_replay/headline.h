#pragma once

// The benchmark's headline (docs/mig-replay.md, "Results first"): per fleet x workload x
// protocol, what tessera gains over each baseline on demand served, seed by seed, with pods
// placed, starvation and the headroom left to the tightest bound. The judge is demand served
// (the intended profiles' slices held); pods placed alone would reward refusing large pods.

#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "sim/mig_replay/benchmark.h"
#include "sim/replay/seed_stats.h"

namespace tessera::sim::mig_replay {

// tessera against one baseline in one cell.
struct HeadlineVersus {
  std::string policy;
  double served = 0;             // the baseline's demand served, mean %
  PairedDifference served_diff;  // tessera - baseline, points, seed by seed
  // Behind: the whole 95% interval of the paired difference lies below zero.
  bool behind() const;
};

struct HeadlineRow {
  std::string fleet;
  std::string workload;
  std::string protocol;
  double served = 0;  // tessera's demand served, mean % of memory slices
  // Pods placed, % of arrivals: accepted (saturation, steady) or ever placed (pending queue).
  double placed = 0;
  std::vector<HeadlineVersus> versus;  // one per baseline that ran, in the given order
  std::string best_baseline;           // the baseline serving the most demand
  PairedDifference versus_best;        // tessera - that baseline
  // Starvation, per request type pooled over seeds: the largest share of a type's pods never
  // placed under tessera, and the most by which it exceeds the best baseline's for that type
  // (points; <= 0: no type starved more).
  double worst_never_placed = 0;
  double starvation_excess = std::numeric_limits<double>::quiet_NaN();
  // The same judged as demand is, seed by seed: per request type, tessera's share of its pods
  // never placed minus the best baseline's, paired over the seeds where both saw the type. The
  // type whose 95% interval starts highest (its mean minus half-width; the mean alone with one
  // seed) is named; starved_beyond_noise when a type's whole interval lies above zero.
  std::string starved_type;
  PairedDifference starved_diff;
  bool starved_beyond_noise = false;
  // Pending queue only (NaN elsewhere): the largest 95th-percentile wait of a request type, in
  // mean lifetimes (pods never placed count with their wait until the run's end), under tessera
  // and under the best baseline.
  double worst_wait_p95 = std::numeric_limits<double>::quiet_NaN();
  double best_worst_wait_p95 = std::numeric_limits<double>::quiet_NaN();
  // The tightest bound on demand served that ran in this cell (NaN: none), tessera's headroom
  // to it, and the share of the best baseline's gap to it that tessera closes (%).
  double bound = std::numeric_limits<double>::quiet_NaN();
  double headroom = std::numeric_limits<double>::quiet_NaN();
  double gap_closed = std::numeric_limits<double>::quiet_NaN();
  // Where offline-lp-guided ran: what a feasible schedule that knows the future served, and so
  // the least headroom there is (the optimum lies between it and the bound). NaN: none.
  double offline = std::numeric_limits<double>::quiet_NaN();
  double headroom_floor = std::numeric_limits<double>::quiet_NaN();
};

// `subject` is tessera's policy name; every other policy of the records except the references
// and bounds is a baseline, and `featured` (those present) are listed in `versus` in that order.
std::vector<HeadlineRow> BuildHeadline(const std::vector<RunRecord>& records,
                                       std::string_view subject,
                                       const std::vector<std::string>& featured);

// Columns that are not baselines: the pooled-slices reference, offline-lp-guided and the
// bounds.
bool IsReferenceColumn(std::string_view policy);
// The bounds alone (upper-bound, placement-bound).
bool IsBoundColumn(std::string_view policy);

// The baselines the headline names, in column order.
const std::vector<std::string>& FeaturedBaselines();

// A fixed-width table per protocol for the terminal.
std::string HeadlineText(const std::vector<HeadlineRow>& rows);
// The same as Markdown tables, for docs/mig-replay.md.
std::string HeadlineMarkdown(const std::vector<HeadlineRow>& rows);

}  // namespace tessera::sim::mig_replay
