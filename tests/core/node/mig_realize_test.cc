#include "core/node/mig_realize.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::node {
namespace {

using ::testing::HasSubstr;

DriverMigInstance Inst(uint32_t start, uint32_t gi, bool with_ci = true) {
  return DriverMigInstance{
      "GPU-0", gi, "1g.24gb", {start, 3}, with_ci, 0, with_ci ? "MIG-" + std::to_string(gi) : ""};
}

codec::MigAllocation Alloc(uint32_t start, int device = 0, int container = 0) {
  codec::MigAllocation a;
  a.container_index = container;
  a.device_index = device;
  a.gpu_uuid = "GPU-0";
  a.profile = "1g.24gb";
  a.placement = {start, 3};
  return a;
}

LedgerEntry Entry(uint32_t start, const std::string& uid, uint32_t gi) {
  LedgerEntry e;
  e.gpu_uuid = "GPU-0";
  e.profile = "1g.24gb";
  e.placement = {start, 3};
  e.pod_uid = uid;
  e.created = true;
  e.gpu_instance_id = gi;
  e.mig_uuid = "MIG-" + std::to_string(gi);
  return e;
}

struct Fixture {
  PodMigClaim claim{"ns/a", "uid-a", {Alloc(9, 1), Alloc(0, 0), Alloc(3, 0, 1)}};
  NodeClaims node;
  std::vector<LedgerEntry> ledger;
  std::vector<DriverMigInstance> on_gpu;

  Result<RealizePlan> Plan() {
    if (node.claims.empty()) node.claims = {claim};
    RealizeInput in;
    in.claim = &claim;
    in.allocations = ContainerAllocations(claim, 0).value();
    in.instances_by_gpu["GPU-0"] = on_gpu;
    in.ledger = &ledger;
    in.node = &node;
    return PlanRealize(in);
  }
};

TEST(MigRealizeTest, ContainerAllocationsAreThatContainersInDeviceOrder) {
  Fixture f;
  auto allocs = ContainerAllocations(f.claim, 0);
  ASSERT_TRUE(allocs.ok());
  ASSERT_EQ(allocs->size(), 2U);
  EXPECT_EQ((*allocs)[0].placement.start, 0U);
  EXPECT_EQ((*allocs)[1].placement.start, 9U);
  auto none = ContainerAllocations(f.claim, 2);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.error().message,
              HasSubstr("pod ns/a container 2: hami.io/vgpu-mig-allocations"));
}

TEST(MigRealizeTest, EmptyGpuCreatesEveryAllocation) {
  Fixture f;
  auto plan = f.Plan();
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->create, (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(plan->finish.empty());
  EXPECT_TRUE(plan->replace.empty());
  EXPECT_EQ(plan->reuse, (std::vector<bool>{false, false}));
}

TEST(MigRealizeTest, ThisPodsOwnInstanceIsReusedAndFinishedWhenHalfMade) {
  Fixture f;
  f.on_gpu = {Inst(0, 1), Inst(9, 2, false)};
  f.ledger = {Entry(0, "uid-a", 1), Entry(9, "uid-a", 2)};
  auto plan = f.Plan();
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(plan->create.empty());
  EXPECT_EQ(plan->reuse, (std::vector<bool>{true, true}));
  EXPECT_EQ(plan->reused[0].gpu_instance_id, 1U);
  EXPECT_EQ(plan->finish, (std::vector<size_t>{1}));
}

TEST(MigRealizeTest, AnEndedPodsInstanceIsReplacedNeverHandedOn) {
  Fixture f;
  f.on_gpu = {Inst(0, 1)};
  f.ledger = {Entry(0, "uid-ended", 1)};
  auto plan = f.Plan();
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->replace.size(), 1U);
  EXPECT_EQ(plan->replace[0].gpu_instance_id, 1U);
  EXPECT_EQ(plan->create, (std::vector<size_t>{0, 1}));
}

// Issue 38 A: a placement match is no proof of ownership.
TEST(MigRealizeTest, AnInstanceTesseraDidNotCreateAtThePlacementRefusesIt) {
  Fixture f;
  f.on_gpu = {Inst(0, 4)};
  auto plan = f.Plan();
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.error().message,
              HasSubstr("pod ns/a container 0 device 0: 1g.24gb at 0:3 on GPU-0: an instance "
                        "tessera did not create is there (GPU instance 4)"));
}

TEST(MigRealizeTest, AnInstanceAnotherLivePodClaimsIsRefused) {
  Fixture f;
  f.on_gpu = {Inst(9, 2)};
  f.ledger = {Entry(9, "uid-b", 2)};
  f.node.claims = {f.claim, {"ns/b", "uid-b", {Alloc(9)}}};
  auto plan = f.Plan();
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.error().message, HasSubstr("the instance there is held by pod ns/b"));
}

TEST(MigRealizeTest, OverlappingSlicesAreRefusedNamingWhatHoldsThem) {
  Fixture f;
  DriverMigInstance wide{"GPU-0", 5, "2g.24gb", {6, 6}, true, 0, "MIG-5"};
  f.on_gpu = {wide};
  auto plan = f.Plan();
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.error().message,
              HasSubstr("device 1: 1g.24gb at 9:3 on GPU-0: the slices are taken by 2g.24gb at "
                        "6:6 (not created for this pod)"));
}

TEST(MigRealizeTest, DevicesOfOneContainerMayNotOverlap) {
  Fixture f;
  f.claim.allocations = {Alloc(0, 0), Alloc(0, 1)};
  f.claim.allocations[1].placement = {0, 6};
  f.claim.allocations[1].profile = "2g.24gb";
  auto plan = f.Plan();
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.error().message, HasSubstr("overlaps device 0 of the same container"));
}

}  // namespace
}  // namespace tessera::node
