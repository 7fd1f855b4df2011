// The node agent's reconcile decision on arbitrary claims, instances and ledgers: whatever the
// input, it never destroys a live pod's own instance, never destroys on an incomplete pod view
// or one not provably newer than the ledger entry (unless a read proved the entry's pod gone),
// never destroys on a GPU an unreadable pod
// names, never destroys an instance that is not tessera's unless reclaiming is on (and never
// one at a live pod's placement), never keeps (adopts) an instance the ledger does not prove
// tessera's, never forgets an entry of a GPU that was not listed, and recreates a lost
// instance only for its own live pod, from a listed GPU and a complete, recent view, where
// nothing occupies its slices.

#include <algorithm>
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
    inst.gpu_instance_id = in.Next() % 4;
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
    e.pod = e.pod_uid.empty() ? "" : "ns/" + e.pod_uid;
    // The ledger holds one entry per (GPU, profile, placement).
    bool seen = false;
    for (const auto& other : input.ledger) {
      seen = seen || (other.gpu_uuid == e.gpu_uuid && other.profile == e.profile &&
                      other.placement == e.placement);
    }
    if (!seen) input.ledger.push_back(e);
  }
  for (int g = 0; g < 3; ++g) {
    if (in.Next() % 4 != 0) input.listed_gpus.insert(GpuOf(static_cast<uint8_t>(g)));
  }
  // Instances are known only on the GPUs that could be listed.
  std::erase_if(input.actual,
                [&](const auto& d) { return input.listed_gpus.count(d.gpu_uuid) == 0; });
  for (auto& e : input.ledger) {  // an intent, or the record of a GPU instance id
    e.created = in.Next() % 3 != 0;
    e.gpu_instance_id = in.Next() % 4;
  }
  input.pods.complete = in.Next() % 2;
  input.pods.fresh_ms = in.Next();
  input.now_ms = in.Next();
  input.grace_ms = in.Next() % 16;
  input.reclaim_foreign = in.Next() % 5 == 0;
  const int64_t judged_up_to = std::min(input.now_ms, input.pods.fresh_ms) - input.grace_ms;
  // Read last, so earlier inputs keep their meaning: lost records, recorded MIG UUIDs, and the
  // instances' own, and how old a view may be for a recreation.
  for (auto& e : input.ledger) {
    e.lost = e.created && in.Next() % 4 == 0;
    if (e.created && in.Next() % 2 == 0) e.mig_uuid = "MIG-" + std::to_string(in.Next() % 3);
  }
  for (auto& d : input.actual) {
    if (d.has_compute_instance) d.mig_uuid = "MIG-" + std::to_string(in.Next() % 3);
  }
  input.recreate_max_view_age_ms = in.Next();
  // Pods a read from the API server proved gone (read last, as above).
  for (int u = 0; u < 5; ++u) {
    if (in.Next() % 4 == 0) input.pods_proven_gone.insert("uid-" + std::to_string(u));
  }
  auto proves = [](const tessera::node::LedgerEntry& e, const tessera::node::DriverMigInstance& d) {
    return !e.lost && e.gpu_uuid == d.gpu_uuid && e.profile == d.profile &&
           e.placement == d.placement &&
           (!e.created || (e.gpu_instance_id == d.gpu_instance_id &&
                           (e.mig_uuid.empty() || d.mig_uuid.empty() || e.mig_uuid == d.mig_uuid)));
  };

  const tessera::node::ReconcilePlan plan = tessera::node::PlanReconcile(input);
  for (const auto& d : plan.destroy) {
    if (!input.pods.complete) std::abort();
    for (const auto& g : claims.unreadable_gpus) {
      if (g == d.gpu_uuid) std::abort();
    }
    bool ours = false;
    std::string owner;
    for (const auto& e : input.ledger) {
      if (proves(e, d)) {
        if (!ours) owner = e.pod_uid;
        ours = true;
        // Not provably older than the view, nor its pod proven gone by a read.
        if (e.written_ms >= judged_up_to &&
            (e.pod_uid.empty() || input.pods_proven_gone.count(e.pod_uid) == 0))
          std::abort();
      }
    }
    // A live pod's own instance, and any foreign instance at a live pod's placement, is never
    // destroyed.
    for (const auto& c : claims.claims) {
      for (const auto& a : c.allocations) {
        if (tessera::node::Matches(d, a) && (!ours || owner.empty() || owner == c.uid))
          std::abort();
      }
    }
    if (!ours && !input.reclaim_foreign) std::abort();
  }
  for (const auto& k : plan.keep) {
    bool proven = false;
    for (const auto& e : input.ledger) proven = proven || proves(e, k.instance);
    if (!proven) std::abort();  // adopted by placement alone
  }
  for (const auto& f : plan.forget) {
    if (input.listed_gpus.count(f.gpu_uuid) == 0) std::abort();
    for (const auto& d : input.actual) {
      if (proves(f, d)) std::abort();  // its instance is still there
    }
  }
  // A recreation: a live claim of the entry's own pod at its exact key, a GPU that was listed, a
  // complete and recent view, and nothing on its slices; its entry is neither forgotten nor
  // marked lost.
  for (const auto& r : plan.recreate) {
    const auto& e = r.entry;
    if (!input.pods.complete || input.now_ms - input.pods.fresh_ms > input.recreate_max_view_age_ms)
      std::abort();
    if (input.listed_gpus.count(e.gpu_uuid) == 0 || r.pod_uid != e.pod_uid) std::abort();
    if (!e.created && !e.lost) std::abort();  // intents are never recreated
    bool claimed = false;
    for (const auto& c : claims.claims) {
      for (const auto& a : c.allocations) {
        claimed = claimed || (c.uid == e.pod_uid && a.gpu_uuid == e.gpu_uuid &&
                              a.profile == e.profile && a.placement == e.placement);
      }
    }
    if (!claimed) std::abort();
    for (const auto& d : input.actual) {
      if (d.gpu_uuid == e.gpu_uuid && d.placement.Overlaps(e.placement)) std::abort();
    }
    for (const auto& f : plan.forget) {
      if (f == e) std::abort();
    }
    for (const auto& m : plan.mark_lost) {
      if (m == e) std::abort();
    }
  }
  // The pods named for a read: each once, with a uid, not already proven gone.
  for (size_t i = 0; i < plan.awaiting_proof.size(); ++i) {
    const auto& p = plan.awaiting_proof[i];
    if (p.uid.empty() || input.pods_proven_gone.count(p.uid) > 0) std::abort();
    for (size_t j = 0; j < i; ++j) {
      if (plan.awaiting_proof[j] == p) std::abort();
    }
  }
  // Every instance lands in exactly one bucket.
  const size_t buckets =
      plan.keep.size() + plan.destroy.size() + plan.left_alone.size() + plan.protected_.size();
  if (buckets != input.actual.size()) std::abort();
  return 0;
}
