#pragma once

// The two replay protocols of the MIG benchmark (docs/mig-replay.md, "Protocols"), written
// against a Placer so that the policies and the geometry-free bound run exactly the same
// arrival sequence.

#include <cstdint>
#include <string>
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
  // Memory slices of the intended profiles of an accepted pod of `type`, summed (the demand it
  // serves, whatever profile a policy actually gave it).
  virtual int64_t ServedSlices(int type) const = 0;
  virtual int64_t TotalSlices() const = 0;
};

// A policy placing into its MigCluster.
class PolicyPlacer : public Placer {
 public:
  PolicyPlacer(MigCluster& cluster, MigPolicy& policy)
      : cluster_(cluster), policy_(policy), probe_(cluster) {}
  bool Place(const std::string& key, int type) override;
  void Release(const std::string& key) override { cluster_.Release(key); }
  Snapshot Measure() const override { return probe_.Measure(); }
  int64_t ServedSlices(int type) const override;
  int64_t TotalSlices() const override { return cluster_.total_memory_slices(); }

 private:
  MigCluster& cluster_;
  MigPolicy& policy_;
  SnapshotProbe probe_;
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
  double acceptance() const {
    return arrived == 0 ? 0 : static_cast<double>(accepted) / static_cast<double>(arrived);
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

// Average fraction of a GPU's memory slices one request of the workload occupies on `cluster`
// (intended profiles, times the count), over its GPUs: sizes the streams and the offered load.
double ExpectedGpuShare(const MigCluster& cluster);

// Memory slices of the intended profiles of one accepted request of `type`, summed: the demand
// it serves, whatever profile a policy actually gives it (the intended profile on the first GPU
// of the fleet that has one: identical on every model with 8 memory slices).
int64_t IntendedServedSlices(const MigCluster& cluster, int type);

// The pod key of the i-th arrival.
std::string ArrivalKey(size_t i);

}  // namespace tessera::sim::mig_replay
