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

LedgerEntry Entry(uint32_t start, const std::string& uid, int64_t written = 10) {
  LedgerEntry e;
  e.gpu_uuid = "GPU-0";
  e.profile = "1g.24gb";
  e.placement = {start, 3};
  e.pod_uid = uid;
  e.created = true;
  e.written_ms = written;
  return e;
}

TEST(MigReconcileTest, ClaimedInstancesAreKeptUnclaimedOnesOfOursDestroyed) {
  NodeClaims claims;
  claims.claims = {{"ns/a", "uid-a", {Alloc(9), Alloc(6, 1)}}};
  ReconcileInput in;
  in.claims = &claims;
  in.actual = {Inst(0, 1), Inst(6, 2), Inst(9, 3), Inst(3, 4)};
  in.ledger = {Entry(0, "uid-gone"), Entry(9, "uid-a")};
  in.pods_synced = true;
  in.pods_seen_ms = 100;
  auto plan = PlanReconcile(in);
  ASSERT_EQ(plan.keep.size(), 2U);
  EXPECT_EQ(plan.keep[0].instance.placement.start, 9U);
  EXPECT_EQ(plan.keep[1].entry.pod_uid, "uid-a");
  ASSERT_EQ(plan.destroy.size(), 1U);
  EXPECT_EQ(plan.destroy[0].placement.start, 0U);
  ASSERT_EQ(plan.left_alone.size(), 1U);  // at 3: not tessera's
  EXPECT_EQ(plan.left_alone[0].placement.start, 3U);
  EXPECT_TRUE(plan.forget.empty());
}

TEST(MigReconcileTest, NothingIsDestroyedOnAPartialStaleOrUnreadableView) {
  NodeClaims claims;
  ReconcileInput in;
  in.claims = &claims;
  in.actual = {Inst(0, 1)};
  in.ledger = {Entry(0, "uid-gone", /*written=*/50)};
  in.pods_seen_ms = 100;
  in.pods_synced = false;
  EXPECT_EQ(PlanReconcile(in).protected_.size(), 1U);
  in.pods_synced = true;
  in.pods_seen_ms = 50;  // the view is not newer than the ledger entry
  EXPECT_EQ(PlanReconcile(in).protected_.size(), 1U);
  in.pods_seen_ms = 51;
  EXPECT_EQ(PlanReconcile(in).destroy.size(), 1U);
  claims.unreadable_gpus = {"GPU-0"};
  EXPECT_EQ(PlanReconcile(in).protected_.size(), 1U);
}

TEST(MigReconcileTest, HalfMadeInstancesAreFinishedAndMissingOnesForgotten) {
  NodeClaims claims;
  claims.claims = {{"ns/a", "uid-a", {Alloc(9)}}};
  ReconcileInput in;
  in.claims = &claims;
  DriverMigInstance half = Inst(9, 3);
  half.has_compute_instance = false;
  half.mig_uuid.clear();
  in.actual = {half};
  in.ledger = {Entry(6, "uid-a")};
  auto plan = PlanReconcile(in);
  ASSERT_EQ(plan.finish.size(), 1U);
  ASSERT_EQ(plan.forget.size(), 1U);
  EXPECT_EQ(plan.forget[0].placement.start, 6U);
}

TEST(MigReconcileTest, ConflictsAreReportedNotResolvedByForce) {
  NodeClaims claims;
  claims.claims = {{"ns/a", "uid-a", {Alloc(9)}}, {"ns/b", "uid-b", {Alloc(9)}}};
  DriverMigInstance two_g{"GPU-0", 7, "2g.48gb", {6, 6}, true, 0, "MIG-x"};
  ReconcileInput in;
  in.claims = &claims;
  in.actual = {Inst(9, 1)};
  auto plan = PlanReconcile(in);
  ASSERT_EQ(plan.conflicts.size(), 1U);
  EXPECT_NE(plan.conflicts[0].find("ns/b"), std::string::npos);
  in.actual = {two_g};
  plan = PlanReconcile(in);
  ASSERT_EQ(plan.conflicts.size(), 2U);
  EXPECT_NE(plan.conflicts[0].find("blocked by GPU-0 2g.48gb at 6:6"), std::string::npos);
  EXPECT_TRUE(plan.destroy.empty());
}

}  // namespace
}  // namespace tessera::node

namespace tessera::node {
namespace {

TEST(MigReconcileTest, AnEndedPodsInstanceIsNotHandedToTheNextClaimant) {
  NodeClaims claims;
  claims.claims = {{"ns/new", "uid-new", {Alloc(9)}}};
  ReconcileInput in;
  in.claims = &claims;
  in.actual = {Inst(9, 1)};
  in.ledger = {Entry(9, "uid-old")};
  in.pods_synced = true;
  in.pods_seen_ms = 100;
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

}  // namespace
}  // namespace tessera::node
