#include "core/node/mig_reconcile.h"

#include <gtest/gtest.h>

namespace tessera::node {
namespace {

DriverMigInstance Inst(uint32_t start, uint32_t gi, const std::string& gpu = "GPU-0") {
  return DriverMigInstance{gpu, gi, "1g.24gb", {start, 3}, true, 0, "MIG-" + std::to_string(gi)};
}

codec::MigAllocation Alloc(uint32_t start, int device = 0, const std::string& gpu = "GPU-0") {
  codec::MigAllocation a;
  a.device_index = device;
  a.gpu_uuid = gpu;
  a.profile = "1g.24gb";
  a.placement = {start, 3};
  return a;
}

// A confirmed entry: tessera created GPU instance `gi` at `start`.
LedgerEntry Entry(uint32_t start, const std::string& uid, uint32_t gi, int64_t written = 10) {
  LedgerEntry e;
  e.gpu_uuid = "GPU-0";
  e.profile = "1g.24gb";
  e.placement = {start, 3};
  e.pod_uid = uid;
  e.created = true;
  e.gpu_instance_id = gi;
  e.written_ms = written;
  return e;
}

// An intent: written before the driver was asked to create at `start`.
LedgerEntry Intent(uint32_t start, const std::string& uid, int64_t written = 10) {
  LedgerEntry e = Entry(start, uid, 0, written);
  e.created = false;
  return e;
}

// GPU-0 listed, a complete pod view fresh at 100, clock at 100, no grace.
ReconcileInput Input(const NodeClaims& claims) {
  ReconcileInput in;
  in.claims = &claims;
  in.listed_gpus = {"GPU-0"};
  in.pods = {true, 100};
  in.now_ms = 100;
  return in;
}

TEST(MigReconcileTest, ClaimedInstancesAreKeptUnclaimedOnesOfOursDestroyed) {
  NodeClaims claims;
  claims.claims = {{"ns/a", "uid-a", {Alloc(9), Alloc(6, 1)}}};
  ReconcileInput in = Input(claims);
  in.actual = {Inst(0, 1), Inst(6, 2), Inst(9, 3), Inst(3, 4)};
  in.ledger = {Entry(0, "uid-gone", 1), Entry(9, "uid-a", 3)};
  auto plan = PlanReconcile(in);
  ASSERT_EQ(plan.keep.size(), 1U);
  EXPECT_EQ(plan.keep[0].instance.placement.start, 9U);
  EXPECT_EQ(plan.keep[0].entry.pod_uid, "uid-a");
  ASSERT_EQ(plan.destroy.size(), 1U);
  EXPECT_EQ(plan.destroy[0].placement.start, 0U);
  ASSERT_EQ(plan.left_alone.size(), 2U);  // at 3 and at 6: not tessera's
  EXPECT_EQ(plan.left_alone[0].placement.start, 6U);
  EXPECT_EQ(plan.left_alone[1].placement.start, 3U);
  EXPECT_TRUE(plan.forget.empty());
}

// Issue 38 A: a placement match with a live pod's claim proves nothing.
TEST(MigReconcileTest, AForeignInstanceAtAClaimIsReportedNeverAdoptedNorDestroyed) {
  NodeClaims claims;
  claims.claims = {{"ns/a", "uid-a", {Alloc(9)}}};
  ReconcileInput in = Input(claims);
  DriverMigInstance half = Inst(9, 3);  // made by nvidia-mig-parted, say, without a CI
  half.has_compute_instance = false;
  in.actual = {half};
  for (bool reclaim : {false, true}) {
    in.reclaim_foreign = reclaim;
    auto plan = PlanReconcile(in);
    EXPECT_TRUE(plan.keep.empty());
    EXPECT_TRUE(plan.finish.empty());
    EXPECT_TRUE(plan.destroy.empty());  // the pod may run on it, even when reclaiming
    ASSERT_EQ(plan.left_alone.size(), 1U);
    ASSERT_EQ(plan.foreign.size(), 1U);
    ASSERT_EQ(plan.foreign_at_claims.size(), 1U);
    EXPECT_EQ(plan.foreign_at_claims[0].pod_uid, "uid-a");
    EXPECT_NE(plan.foreign_at_claims[0].message.find("cannot be created at 9:3"), std::string::npos)
        << plan.foreign_at_claims[0].message;
  }
  // Once unclaimed, it is still not tessera's: left alone unless reclaiming.
  NodeClaims none;
  in.claims = &none;
  in.reclaim_foreign = false;
  EXPECT_EQ(PlanReconcile(in).left_alone.size(), 1U);
  in.reclaim_foreign = true;
  EXPECT_EQ(PlanReconcile(in).destroy.size(), 1U);
}

// A confirmed entry proves only the GPU instance it recorded: what an operator made at the same
// placement after tessera's was gone is not tessera's, and the entry is forgotten.
TEST(MigReconcileTest, AConfirmedEntryProvesOnlyItsOwnGpuInstance) {
  NodeClaims claims;
  ReconcileInput in = Input(claims);
  in.actual = {Inst(9, 7)};
  in.ledger = {Entry(9, "uid-gone", 2)};
  auto plan = PlanReconcile(in);
  EXPECT_TRUE(plan.destroy.empty());
  EXPECT_EQ(plan.left_alone.size(), 1U);
  ASSERT_EQ(plan.forget.size(), 1U);
  // An intent proves whatever sits at its placement: the driver may have made it before a crash.
  in.ledger = {Intent(9, "uid-gone")};
  plan = PlanReconcile(in);
  EXPECT_EQ(plan.destroy.size(), 1U);
  EXPECT_TRUE(plan.forget.empty());
}

TEST(MigReconcileTest, NothingIsDestroyedOnAPartialStaleOrUnreadableView) {
  NodeClaims claims;
  ReconcileInput in = Input(claims);
  in.actual = {Inst(0, 1)};
  in.ledger = {Entry(0, "uid-gone", 1, /*written=*/50)};
  in.now_ms = 1000;
  in.pods = {false, 100};
  EXPECT_EQ(PlanReconcile(in).protected_.size(), 1U);
  in.pods = {true, 50};  // the view is not newer than the ledger entry
  EXPECT_EQ(PlanReconcile(in).protected_.size(), 1U);
  in.pods = {true, 51};
  EXPECT_EQ(PlanReconcile(in).destroy.size(), 1U);
  in.grace_ms = 1;  // newer, but not by the grace period
  EXPECT_EQ(PlanReconcile(in).protected_.size(), 1U);
  in.grace_ms = 0;
  in.pods = {true, 1000};
  in.now_ms = 50;  // nor newer than the clock
  EXPECT_EQ(PlanReconcile(in).protected_.size(), 1U);
  in.now_ms = 1000;
  claims.unreadable_gpus = {"GPU-0"};
  EXPECT_EQ(PlanReconcile(in).protected_.size(), 1U);
}

// Issue 38 C: a watch that silently stopped leaves the view's freshness behind; the clock
// advancing does not make the view any newer.
TEST(MigReconcileTest, AViewFreshOnlyUpToBeforeTheEntryDestroysNothingHoweverLate) {
  NodeClaims claims;  // the stale cache never saw the pod
  ReconcileInput in = Input(claims);
  in.actual = {Inst(9, 3)};
  in.ledger = {Entry(9, "uid-live", 3, /*written=*/1000)};
  in.pods = {true, /*fresh_ms=*/900};  // the last event before the watch died
  in.grace_ms = 10000;
  in.now_ms = 1000 + 3600 * 1000;
  auto plan = PlanReconcile(in);
  EXPECT_TRUE(plan.destroy.empty());
  ASSERT_EQ(plan.protected_.size(), 1U);
  ASSERT_EQ(plan.awaiting_fresher_view.size(), 1U);
  EXPECT_NE(plan.awaiting_fresher_view[0].find("GPU-0 1g.24gb at 9:3"), std::string::npos);
  in.pods.fresh_ms = 1000 + 10001;  // a relist or an event newer than the entry by the grace
  EXPECT_EQ(PlanReconcile(in).destroy.size(), 1U);
}

// A view that is not fresh enough names the held-back entries' pods, each once, for a read
// from the API server; a read that proves a pod gone releases that pod's entries, and only
// those. Entries without a pod uid cannot be proven gone by a read.
TEST(MigReconcileTest, AReadProvingThePodGoneStandsInForAFresherView) {
  NodeClaims claims;  // the view shows neither pod a nor pod b
  ReconcileInput in = Input(claims);
  in.actual = {Inst(9, 3), Inst(6, 2), Inst(3, 4), Inst(0, 1)};
  LedgerEntry a9 = Entry(9, "uid-a", 3, /*written=*/95), a6 = Entry(6, "uid-a", 2, 95);
  LedgerEntry b3 = Entry(3, "uid-b", 4, 95), anon = Entry(0, "", 1, 95);
  a9.pod = a6.pod = "ns/a";
  b3.pod = "ns/b";
  anon.pod = "ns/c";
  in.ledger = {a9, a6, b3, anon};
  in.grace_ms = 10;  // the view (fresh at 100) is not newer than the entries by 10 ms
  auto plan = PlanReconcile(in);
  EXPECT_TRUE(plan.destroy.empty());
  EXPECT_EQ(plan.awaiting_fresher_view.size(), 4U);
  EXPECT_EQ(plan.awaiting_proof, (std::vector<PodRef>{{"ns/a", "uid-a"}, {"ns/b", "uid-b"}}));

  in.pods_proven_gone = {"uid-a", "uid-other"};
  plan = PlanReconcile(in);
  ASSERT_EQ(plan.destroy.size(), 2U);
  EXPECT_EQ(plan.destroy[0].placement.start, 9U);
  EXPECT_EQ(plan.destroy[1].placement.start, 6U);
  EXPECT_EQ(plan.awaiting_fresher_view.size(), 2U);  // pod b's, and the entry without a uid
  EXPECT_EQ(plan.awaiting_proof, (std::vector<PodRef>{{"ns/b", "uid-b"}}));

  // A proof never overrides what the view shows claimed, nor an incomplete view.
  claims.claims = {{"ns/a", "uid-a", {Alloc(9)}}};
  plan = PlanReconcile(in);
  ASSERT_EQ(plan.destroy.size(), 1U);
  EXPECT_EQ(plan.destroy[0].placement.start, 6U);
  EXPECT_EQ(plan.keep.size(), 1U);
  in.pods.complete = false;
  plan = PlanReconcile(in);
  EXPECT_TRUE(plan.destroy.empty());
  EXPECT_TRUE(plan.awaiting_proof.empty());
}

// A lost record whose pod the view does not show is forgotten on a read proving the pod gone,
// as on a fresher view.
TEST(MigReconcileTest, AGoneEntryIsForgottenWhenAReadProvesItsPodGone) {
  NodeClaims claims;
  ReconcileInput in = Input(claims);
  LedgerEntry entry = Entry(9, "uid-a", 3, /*written=*/50);
  entry.pod = "ns/a";
  in.ledger = {entry};
  in.pods = {true, 40};  // taken before the entry was written
  auto plan = PlanReconcile(in);
  EXPECT_TRUE(plan.forget.empty());
  EXPECT_EQ(plan.awaiting_proof, (std::vector<PodRef>{{"ns/a", "uid-a"}}));
  in.pods_proven_gone = {"uid-a"};
  plan = PlanReconcile(in);
  EXPECT_EQ(plan.forget.size(), 1U);
  EXPECT_TRUE(plan.mark_lost.empty());
  EXPECT_TRUE(plan.awaiting_proof.empty());
}

// A read proves its pod gone only when no pod has the name, another pod (another uid) has
// it, or the pod itself is terminal; a running or terminating pod proves nothing.
TEST(MigReconcileTest, OnlyAReadOfAnAbsentReplacedOrTerminalPodProvesItGone) {
  model::Pod pod;
  pod.ns = "ns";
  pod.name = "a";
  pod.uid = "uid-a";
  pod.phase = "Running";
  EXPECT_TRUE(ReadProvesGone(std::nullopt, "uid-a"));
  EXPECT_FALSE(ReadProvesGone(pod, "uid-a"));
  pod.deleting = true;  // being deleted: its containers may still run
  EXPECT_FALSE(ReadProvesGone(pod, "uid-a"));
  pod.deleting = false;
  pod.phase = "Pending";
  EXPECT_FALSE(ReadProvesGone(pod, "uid-a"));
  for (const char* phase : {"Succeeded", "Failed"}) {
    pod.phase = phase;
    EXPECT_TRUE(ReadProvesGone(pod, "uid-a")) << phase;
  }
  pod.phase = "Running";
  pod.uid = "uid-a2";  // deleted and created again under the same name
  EXPECT_TRUE(ReadProvesGone(pod, "uid-a"));
  pod.uid = "";
  EXPECT_FALSE(ReadProvesGone(pod, "uid-a"));
  EXPECT_FALSE(ReadProvesGone(std::nullopt, ""));  // no uid recorded: nothing to compare
}

TEST(MigReconcileTest, HalfMadeInstancesAreFinishedAndMissingOnesForgotten) {
  NodeClaims claims;
  claims.claims = {{"ns/a", "uid-a", {Alloc(9)}}};
  ReconcileInput in = Input(claims);
  DriverMigInstance half = Inst(9, 3);
  half.has_compute_instance = false;
  half.mig_uuid.clear();
  in.actual = {half};
  in.ledger = {Intent(9, "uid-a"), Entry(6, "uid-a", 2)};
  auto plan = PlanReconcile(in);
  ASSERT_EQ(plan.keep.size(), 1U);
  ASSERT_EQ(plan.finish.size(), 1U);
  ASSERT_EQ(plan.forget.size(), 1U);
  EXPECT_EQ(plan.forget[0].placement.start, 6U);
}

// Issue 38 B: only a complete listing of its GPU shows an entry's instance gone.
TEST(MigReconcileTest, EntriesOfAGpuThatWasNotListedAreKept) {
  NodeClaims claims;
  ReconcileInput in = Input(claims);
  in.listed_gpus.clear();  // the listing failed (or discovery lost the GPU)
  in.ledger = {Entry(6, "uid-gone", 2), Entry(9, "uid-gone", 3)};
  auto plan = PlanReconcile(in);
  EXPECT_TRUE(plan.forget.empty());
  EXPECT_TRUE(plan.destroy.empty());
  in.listed_gpus = {"GPU-1"};  // another GPU listed fine
  EXPECT_TRUE(PlanReconcile(in).forget.empty());
  in.listed_gpus = {"GPU-0"};
  in.actual = {Inst(9, 3)};
  plan = PlanReconcile(in);
  ASSERT_EQ(plan.forget.size(), 1U);
  EXPECT_EQ(plan.forget[0].placement.start, 6U);
  EXPECT_EQ(plan.destroy.size(), 1U);
}

TEST(MigReconcileTest, ConflictsAreReportedNotResolvedByForce) {
  NodeClaims claims;
  claims.claims = {{"ns/a", "uid-a", {Alloc(9)}}, {"ns/b", "uid-b", {Alloc(9)}}};
  DriverMigInstance two_g{"GPU-0", 7, "2g.48gb", {6, 6}, true, 0, "MIG-x"};
  ReconcileInput in = Input(claims);
  in.actual = {Inst(9, 1)};
  in.ledger = {Entry(9, "uid-a", 1)};
  auto plan = PlanReconcile(in);
  ASSERT_EQ(plan.conflicts.size(), 1U);
  EXPECT_NE(plan.conflicts[0].find("ns/b"), std::string::npos);
  in.actual = {two_g};
  plan = PlanReconcile(in);
  ASSERT_EQ(plan.conflicts.size(), 2U);
  EXPECT_NE(plan.conflicts[0].find("blocked by GPU-0 2g.48gb at 6:6"), std::string::npos);
  EXPECT_TRUE(plan.destroy.empty());
}

TEST(MigReconcileTest, AnEndedPodsInstanceIsNotHandedToTheNextClaimant) {
  NodeClaims claims;
  claims.claims = {{"ns/new", "uid-new", {Alloc(9)}}};
  ReconcileInput in = Input(claims);
  in.actual = {Inst(9, 1)};
  in.ledger = {Entry(9, "uid-old", 1)};
  auto plan = PlanReconcile(in);
  EXPECT_TRUE(plan.keep.empty());
  ASSERT_EQ(plan.destroy.size(), 1U);  // the old pod's; the new pod gets a fresh one
  // Unless the old owner still lives: then it is a conflict, and nothing is destroyed.
  claims.claims.push_back({"ns/old", "uid-old", {Alloc(9)}});
  plan = PlanReconcile(in);
  ASSERT_EQ(plan.keep.size(), 1U);
  EXPECT_EQ(plan.keep[0].entry.pod_uid, "uid-old");
  EXPECT_TRUE(plan.destroy.empty());
  EXPECT_EQ(plan.conflicts.size(), 1U);
}

// Issue 38 E: a reboot, GPU reset or driver reload wipes every instance; the kubelet restarts a
// live pod's containers without asking again. The pod's instance is recreated at its placement,
// but only from a complete listing and a complete, recent pod view.
TEST(MigReconcileTest, ALivePodsInstanceGoneFromACompleteListingIsRecreated) {
  NodeClaims claims;
  claims.claims = {{"ns/a", "uid-a", {Alloc(9)}}};
  claims.claims[0].allocations[0].runtime = codec::MigRuntimeIdentity{"MIG-3", 3, 0};
  ReconcileInput in = Input(claims);
  LedgerEntry entry = Entry(9, "uid-a", 3);
  entry.mig_uuid = "MIG-3";
  in.ledger = {entry};
  auto plan = PlanReconcile(in);
  ASSERT_EQ(plan.recreate.size(), 1U);
  EXPECT_EQ(plan.recreate[0].pod, "ns/a");
  EXPECT_EQ(plan.recreate[0].pod_uid, "uid-a");
  EXPECT_EQ(plan.recreate[0].allocation.placement.start, 9U);
  EXPECT_EQ(plan.recreate[0].allocation.runtime->mig_uuid, "MIG-3");  // what the pod was handed
  EXPECT_EQ(plan.recreate[0].entry, entry);
  EXPECT_TRUE(plan.forget.empty());  // the entry becomes the recreation's intent
  EXPECT_TRUE(plan.mark_lost.empty());
  EXPECT_TRUE(plan.lost.empty());

  // The GPU could not be listed: nothing is known to be gone.
  in.listed_gpus.clear();
  plan = PlanReconcile(in);
  EXPECT_TRUE(plan.recreate.empty());
  EXPECT_TRUE(plan.forget.empty());
  EXPECT_TRUE(plan.mark_lost.empty());
  in.listed_gpus = {"GPU-0"};

  // An incomplete or old view may show a pod that ended: the entry is kept as a lost record.
  for (PodViewFreshness view :
       {PodViewFreshness{false, 100}, PodViewFreshness{true, 100 - kRecreateMaxViewAgeMs - 1}}) {
    in.pods = view;
    plan = PlanReconcile(in);
    EXPECT_TRUE(plan.recreate.empty());
    EXPECT_TRUE(plan.forget.empty());
    ASSERT_EQ(plan.mark_lost.size(), 1U);
    EXPECT_EQ(plan.mark_lost[0], entry);
  }
  in.pods = {true, 100 - kRecreateMaxViewAgeMs};
  EXPECT_EQ(PlanReconcile(in).recreate.size(), 1U);

  // A lost record is recreated as well, once the view allows it.
  in.ledger[0].lost = true;
  plan = PlanReconcile(in);
  EXPECT_EQ(plan.recreate.size(), 1U);
  EXPECT_TRUE(plan.mark_lost.empty());

  // An intent's create never took effect: it is forgotten, not recreated (Allocate retries).
  in.ledger = {Intent(9, "uid-a")};
  plan = PlanReconcile(in);
  EXPECT_TRUE(plan.recreate.empty());
  EXPECT_EQ(plan.forget.size(), 1U);
}

TEST(MigReconcileTest, ALostInstanceWhoseSlicesAreTakenIsReportedNotRecreated) {
  NodeClaims claims;
  claims.claims = {{"ns/a", "uid-a", {Alloc(9), Alloc(0, 1)}}};
  ReconcileInput in = Input(claims);
  in.ledger = {Entry(9, "uid-a", 3), Entry(0, "uid-a", 1)};
  in.actual = {Inst(9, 5)};  // made by an operator after the reboot, at pod a's placement
  auto plan = PlanReconcile(in);
  ASSERT_EQ(plan.recreate.size(), 1U);  // the one at 0 is free
  EXPECT_EQ(plan.recreate[0].allocation.placement.start, 0U);
  ASSERT_EQ(plan.lost.size(), 1U);
  EXPECT_EQ(plan.lost[0].pod_uid, "uid-a");
  EXPECT_EQ(plan.lost[0].allocation.placement.start, 9U);
  EXPECT_NE(plan.lost[0].message.find("GPU-0 1g.24gb at 9:3 (GPU instance 5) occupies its slices"),
            std::string::npos)
      << plan.lost[0].message;
  EXPECT_EQ(plan.foreign_at_claims.size(), 1U);
  EXPECT_TRUE(plan.keep.empty());
  EXPECT_TRUE(plan.destroy.empty());
  // Kept as a lost record, so it is recreated once the slices are free again.
  EXPECT_TRUE(plan.forget.empty());
  ASSERT_EQ(plan.mark_lost.size(), 1U);
  EXPECT_EQ(plan.mark_lost[0].placement.start, 9U);

  // Overlapping slices block it too.
  in.actual = {DriverMigInstance{"GPU-0", 7, "2g.48gb", {6, 6}, true, 0, "MIG-x"}};
  plan = PlanReconcile(in);
  ASSERT_EQ(plan.lost.size(), 1U);
  EXPECT_NE(plan.lost[0].message.find("2g.48gb at 6:6"), std::string::npos);
}

// After a reboot the driver hands out the same GPU instance ids again: a lost record proves
// nothing, and a confirmed one only the instance with its MIG UUID, whatever sits at its
// placement with its old id.
TEST(MigReconcileTest, ALostRecordProvesNothing) {
  NodeClaims claims;
  claims.claims = {{"ns/a", "uid-a", {Alloc(9)}}};
  ReconcileInput in = Input(claims);
  LedgerEntry record = Entry(9, "uid-a", 3);
  record.lost = true;
  in.ledger = {record};
  in.actual = {Inst(9, 3)};
  auto plan = PlanReconcile(in);
  EXPECT_TRUE(plan.keep.empty());
  EXPECT_EQ(plan.foreign_at_claims.size(), 1U);
  EXPECT_EQ(plan.lost.size(), 1U);
  EXPECT_EQ(OwningEntry(in.ledger, in.actual[0]), nullptr);
  // Nor does a confirmed entry on the first pass after the reboot: same id, another MIG UUID.
  record.lost = false;
  record.mig_uuid = "MIG-before-the-reboot";
  in.ledger = {record};
  plan = PlanReconcile(in);
  EXPECT_TRUE(plan.keep.empty());
  EXPECT_EQ(plan.foreign_at_claims.size(), 1U);
  EXPECT_EQ(plan.lost.size(), 1U);
  EXPECT_EQ(plan.mark_lost.size(), 1U);
  EXPECT_EQ(OwningEntry(in.ledger, in.actual[0]), nullptr);
  in.ledger[0].mig_uuid = "MIG-3";  // the very instance it recorded
  EXPECT_EQ(OwningEntry(in.ledger, in.actual[0]), &in.ledger[0]);
  EXPECT_EQ(PlanReconcile(in).keep.size(), 1U);
}

// An entry whose instance is gone and whose pod the view does not show is forgotten only when
// the view is newer than the entry: a pod that raced the pod list (W2) keeps its record.
TEST(MigReconcileTest, AGoneEntryIsForgottenOnlyWhenAViewNewerThanItShowsItsPodGone) {
  NodeClaims claims;  // pod a is not in the view
  ReconcileInput in = Input(claims);
  const LedgerEntry entry = Entry(9, "uid-a", 3, /*written=*/50);
  in.ledger = {entry};
  in.pods = {true, 40};  // taken before the entry was written
  auto plan = PlanReconcile(in);
  EXPECT_TRUE(plan.forget.empty());
  ASSERT_EQ(plan.mark_lost.size(), 1U);
  in.pods = {false, 100};
  EXPECT_TRUE(PlanReconcile(in).forget.empty());
  in.pods = {true, 100};
  plan = PlanReconcile(in);
  EXPECT_EQ(plan.forget.size(), 1U);
  EXPECT_TRUE(plan.mark_lost.empty());
  EXPECT_TRUE(plan.recreate.empty());
}

}  // namespace
}  // namespace tessera::node
