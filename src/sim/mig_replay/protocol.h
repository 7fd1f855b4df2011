#pragma once

// The two replay protocols of the MIG benchmark (docs/mig-replay.md, "Protocols"), written
// against a Placer so that the policies and the geometry-free bound run exactly the same
// arrival sequence.

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/mig_replay/demand.h"
#include "sim/mig_replay/metrics.h"
#include "sim/mig_replay/policy.h"

namespace tessera::sim::mig_replay {

class Placer {
 public:
  virtual ~Placer() = default;
  virtual bool Place(const std::string& key, int type) = 0;
  virtual void Release(const std::string& key) = 0;
  virtual Snapshot Measure() const = 0;
  // The demand the accepted pod `key` (of `type`) serves on the GPUs it got, whatever profile a
  // policy actually gave it (MigCluster::DemandOf: memory slices of the intended profiles, or
  // MiB where slices differ between GPUs). Asked while the pod is placed.
  virtual int64_t ServedSlices(const std::string& key, int type) const = 0;
  // What served demand is a share of, in the same unit (MigCluster::demand_capacity).
  virtual int64_t TotalSlices() const = 0;
  // A policy's mistake, after which it refuses every request: the run is then an error.
  virtual std::optional<Error> error() const { return std::nullopt; }
};

// A policy placing into its MigCluster.
class PolicyPlacer : public Placer {
 public:
  PolicyPlacer(MigCluster& cluster, MigPolicy& policy)
      : cluster_(cluster), policy_(policy), probe_(cluster) {}
  std::optional<Error> error() const override { return error_; }
  bool Place(const std::string& key, int type) override;
  void Release(const std::string& key) override { cluster_.Release(key); }
  Snapshot Measure() const override { return probe_.Measure(); }
  int64_t ServedSlices(const std::string& key, int type) const override {
    return cluster_.ServedSlices(key, type);
  }
  int64_t TotalSlices() const override { return cluster_.demand_capacity(); }

 private:
  MigCluster& cluster_;
  MigPolicy& policy_;
  SnapshotProbe probe_;
  std::mt19937_64 rng_;  // handed to the policy; none of the MIG policies draws from it
  std::optional<Error> error_;
};

// Defragmentation during the pending-queue protocol (docs/defrag.md, "Measured in the
// simulator"): every `interval` the waiting requests are handed to a Defragmenter, which may
// evict running pods and place them again so that waiting ones fit, at most
// `evictions_per_window` evictions in any `window`. Times are in mean lifetimes.
struct DefragSchedule {
  int evictions_per_window = 0;  // 0: no defragmentation
  double window = 1;
  double interval = 1.0 / 6;
  bool enabled() const { return evictions_per_window > 0 && interval > 0; }
};

// What one defragmentation round did.
struct DefragRound {
  std::vector<size_t> admitted;     // arrival indices of the waiting requests it placed
  int evictions = 0;                // running pods evicted and placed again
  int64_t moved_served_change = 0;  // served slices of the moved pods, after minus before
};

class Defragmenter {
 public:
  virtual ~Defragmenter() = default;
  // Plans on the placer's cluster with the requests `waiting` (arrival indices, oldest first)
  // pending and at most `max_evictions` evictions, and carries the plan out: the evicted pods
  // keep running where the plan places them again (their departures are unchanged), the
  // admitted requests are placed.
  virtual DefragRound Run(std::span<const size_t> waiting, const std::vector<Arrival>& arrivals,
                          int max_evictions) = 0;
};

// What defragmentation did over a run's measured window (zero without it).
struct DefragCounts {
  int64_t rounds = 0;        // rounds that planned (a request waited and evictions were left)
  int64_t evictions = 0;     // pods evicted and placed again
  int64_t admitted = 0;      // waiting requests placed by a round
  double measured_time = 0;  // the measured window, in mean lifetimes
  int64_t total_slices = 0;  // what served demand is a share of (MigCluster::demand_capacity)
};

// One request type's part of a run's counts (RunMetrics::by_type).
struct TypeOutcome {
  int64_t arrived = 0;
  int64_t accepted = 0;
  int64_t ever_placed = 0;  // pending-queue protocol only
  TypeOutcome& operator+=(const TypeOutcome& o) {
    arrived += o.arrived;
    accepted += o.accepted;
    ever_placed += o.ever_placed;
    return *this;
  }
  bool operator==(const TypeOutcome&) const = default;
};

struct RunMetrics {
  int64_t arrived = 0;        // requests that count (the stream, or the measured window)
  int64_t accepted = 0;       // of those
  int64_t served_slices = 0;  // of the accepted requests counted in `accepted`
  Snapshot snapshot;          // at saturation (protocol a) or averaged over measured arrivals (b)
  // Memory slices of the intended profiles of the pods in the cluster / all memory slices, at
  // saturation or averaged like `snapshot`: the demand served, where memory_slice_ratio also
  // counts what a policy allocated beyond the intended profile.
  double served_ratio = 0;
  DefragCounts defrag;
  // Pending-queue protocol (c) only: of the `arrived` requests, those placed at some point of the
  // run (on arrival or after waiting), and their summed wait from arrival to placement, in mean
  // lifetimes.
  int64_t ever_placed = 0;
  double wait_sum = 0;
  double mean_wait() const {
    return ever_placed == 0 ? 0 : wait_sum / static_cast<double>(ever_placed);
  }
  double ever_placed_ratio() const {
    return arrived == 0 ? 0 : static_cast<double>(ever_placed) / static_cast<double>(arrived);
  }
  double acceptance() const {
    return arrived == 0 ? 0 : static_cast<double>(accepted) / static_cast<double>(arrived);
  }
  // The same counts per request type (Arrival::type), over the same requests: which requests a
  // policy turns away, not only how many. Empty for the bounds.
  std::vector<TypeOutcome> by_type;
  TypeOutcome& OfType(int type) {
    if (static_cast<size_t>(type) >= by_type.size()) by_type.resize(static_cast<size_t>(type) + 1);
    return by_type[static_cast<size_t>(type)];
  }
  // Counts one request of `type` in the total and in its type's part at once.
  void CountArrived(int type) {
    ++arrived;
    ++OfType(type).arrived;
  }
  void CountAccepted(int type) {
    ++accepted;
    ++OfType(type).accepted;
  }
  void CountEverPlaced(int type) {
    ++ever_placed;
    ++OfType(type).ever_placed;
  }
  // Pending-queue protocol (c) only: per request type, the wait of every measured arrival, in
  // mean lifetimes and in arrival order of placement: from arrival to placement for those
  // placed, and censored at the end of the run (its last arrival) for those still waiting then,
  // so that requests never placed count among the longest waits. Empty elsewhere. Floats: a
  // benchmark keeps every run's waits until its CSV files are written.
  std::vector<std::vector<float>> waits_by_type;
  void CountWait(int type, double wait) {
    if (static_cast<size_t>(type) >= waits_by_type.size()) {
      waits_by_type.resize(static_cast<size_t>(type) + 1);
    }
    waits_by_type[static_cast<size_t>(type)].push_back(static_cast<float>(wait));
  }
};

// Protocol (a), arrivals until saturation: requests arrive one by one in the given order and a
// rejected one is dropped. After `stop_after_rejections` consecutive rejections (0: never) the
// cluster counts as saturated and the rest of the stream is rejected unseen. Acceptance is over
// the whole stream; the snapshot is the final state.
RunMetrics RunSaturation(Placer& placer, const std::vector<Arrival>& arrivals,
                         int stop_after_rejections);

// Protocol (b), steady state: Poisson arrivals with exponential lifetimes (Arrival::time and
// lifetime); an accepted pod leaves at time + lifetime. The first `warmup` arrivals only fill
// the cluster; acceptance and the averaged snapshot (taken just before each arrival) are over
// the rest.
RunMetrics RunSteadyState(Placer& placer, const std::vector<Arrival>& arrivals, size_t warmup);

// Protocol (c), steady state with a pending queue: the arrivals of (b), but a request that does
// not fit waits. After every departure the waiting requests are tried again, oldest first, as
// kube-scheduler requeues unschedulable pods on a cluster event (what `tessera simulate` does);
// a new arrival is tried at once. A request placed after waiting leaves a lifetime after its
// placement. The run ends at the last arrival. Over the arrivals after `warmup`: `accepted` are
// those placed on arrival, `ever_placed` those placed by the end, with their waits (wait_sum;
// waits_by_type also holds the censored waits of those never placed); the snapshot and served
// ratio are averaged as in (b).
// With `skip_failed_types`, once a waiting request of a type fails in a retry round the later
// ones of that type are not tried in that round: the round only adds pods, so they would fail
// too under a policy whose refusals are monotone in occupancy (checked against the full retry
// in tests, for every policy); it keeps a long queue from costing a full pass per departure.
// With `defrag` (and a schedule that is enabled), a defragmentation round runs at every
// multiple of the schedule's interval, between the departures before it and those after.
RunMetrics RunPendingQueue(Placer& placer, const std::vector<Arrival>& arrivals, size_t warmup,
                           bool skip_failed_types = true, Defragmenter* defrag = nullptr,
                           const DefragSchedule& schedule = {});

// Average fraction of a GPU's memory slices one request of the workload occupies on `cluster`
// (intended profiles, times the count), over its GPUs: sizes the streams and the offered load.
double ExpectedGpuShare(const MigCluster& cluster);

// Memory slices of the intended profiles of one accepted request of `type`, summed, on the first
// GPU of the fleet that has one: what ServedSlices gives on a fleet whose models all have the same
// memory slices and profile sizes (every fleet but mixed-rtx; see UniformSlices).
int64_t IntendedServedSlices(const MigCluster& cluster, int type);

// The pod key of the i-th arrival.
std::string ArrivalKey(size_t i);
// The arrival index of a pod key ArrivalKey made, or nullopt.
std::optional<size_t> ArrivalIndex(std::string_view key);

}  // namespace tessera::sim::mig_replay
