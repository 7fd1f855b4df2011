// The node agent's reconcile decision on arbitrary claims, instances and ledgers: whatever the
// input, it never destroys a live pod's own instance, never destroys on an incomplete or
// stale pod view, never destroys on a GPU an unreadable pod names, and never destroys an
// instance that is not tessera's unless reclaiming is on.

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/node/mig_reconcile.h"

namespace {

struct Bytes {
  const uint8_t* data;
  size_t size;
  size_t pos = 0;
  uint8_t Next() { return pos < size ? data[pos++] : 0; }
};

tessera::model::Placement PlacementOf(uint8_t b) {
  return {static_cast<uint32_t>(b % 8), 1U + b / 128};
}
std::string GpuOf(uint8_t b) { return "GPU-" + std::to_string(b % 3); }
std::string ProfileOf(uint8_t b) { return b % 2 ? "1g.10gb" : "2g.20gb"; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  tessera::node::NodeClaims claims;
  const int pods = in.Next() % 4;
  for (int p = 0; p < pods; ++p) {
    tessera::node::PodMigClaim claim{"ns/p" + std::to_string(p), "uid-" + std::to_string(p), {}};
    const int n = in.Next() % 4;
    for (int i = 0; i < n; ++i) {
      tessera::codec::MigAllocation a;
      a.device_index = i;
      a.gpu_uuid = GpuOf(in.Next());
      a.profile = ProfileOf(in.Next());
      a.placement = PlacementOf(in.Next());
      claim.allocations.push_back(a);
    }
    claims.claims.push_back(claim);
  }
  if (in.Next() % 4 == 0) claims.unreadable_gpus.push_back(GpuOf(in.Next()));
  tessera::node::ReconcileInput input;
  input.claims = &claims;
  const int actual = in.Next() % 6;
  for (int i = 0; i < actual; ++i) {
    tessera::node::DriverMigInstance inst;
    inst.gpu_uuid = GpuOf(in.Next());
    inst.gpu_instance_id = in.Next();
    inst.profile = ProfileOf(in.Next());
    inst.placement = PlacementOf(in.Next());
    inst.has_compute_instance = in.Next() % 2;
    // The driver never holds overlapping instances on one GPU.
    bool overlaps = false;
    for (const auto& other : input.actual) {
      overlaps =
          overlaps || (other.gpu_uuid == inst.gpu_uuid && other.placement.Overlaps(inst.placement));
    }
    if (!overlaps) input.actual.push_back(inst);
  }
  const int ledger = in.Next() % 6;
  for (int i = 0; i < ledger; ++i) {
    tessera::node::LedgerEntry e;
    e.gpu_uuid = GpuOf(in.Next());
    e.profile = ProfileOf(in.Next());
    e.placement = PlacementOf(in.Next());
    e.written_ms = in.Next();
    e.pod_uid = in.Next() % 2 ? "uid-" + std::to_string(in.Next() % 5) : "";
    // The ledger holds one entry per (GPU, profile, placement).
    bool seen = false;
    for (const auto& other : input.ledger) {
      seen = seen || (other.gpu_uuid == e.gpu_uuid && other.profile == e.profile &&
                      other.placement == e.placement);
    }
    if (!seen) input.ledger.push_back(e);
  }
  input.pods_synced = in.Next() % 2;
  input.pods_seen_ms = in.Next();
  input.reclaim_foreign = in.Next() % 5 == 0;

  const tessera::node::ReconcilePlan plan = tessera::node::PlanReconcile(input);
  for (const auto& d : plan.destroy) {
    if (!input.pods_synced) std::abort();
    for (const auto& g : claims.unreadable_gpus) {
      if (g == d.gpu_uuid) std::abort();
    }
    bool ours = false;
    std::string owner;
    for (const auto& e : input.ledger) {
      if (e.gpu_uuid == d.gpu_uuid && e.profile == d.profile && e.placement == d.placement) {
        if (!ours) owner = e.pod_uid;
        ours = true;
        if (e.written_ms >= input.pods_seen_ms) std::abort();  // too young to judge
      }
    }
    // A live pod's own instance (by the ledger, or unrecorded and claimed) is never destroyed.
    for (const auto& c : claims.claims) {
      for (const auto& a : c.allocations) {
        if (tessera::node::Matches(d, a) && (!ours || owner.empty() || owner == c.uid))
          std::abort();
      }
    }
    if (!ours && !input.reclaim_foreign) std::abort();
  }
  // Every instance lands in exactly one bucket.
  const size_t buckets =
      plan.keep.size() + plan.destroy.size() + plan.left_alone.size() + plan.protected_.size();
  if (buckets != input.actual.size()) std::abort();
  return 0;
}
