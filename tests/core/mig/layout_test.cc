#include "core/mig/layout.h"

#include <gtest/gtest.h>

#include "support/builders.h"

namespace tessera::mig {
namespace {

using testing::A100Mig;
using testing::RtxPro6000Mig;

TEST(GpuMigModelTest, RtxPro6000FitsExactlyFourOneGInstances) {
  GpuMigModel model(RtxPro6000Mig("GPU-r"), nullptr);
  EXPECT_EQ(model.memory_slices(), 12U);
  std::vector<InstanceDemand> four(4, InstanceDemand{8000, 0});
  auto arranged = model.Arrange(Layout{}, four);
  ASSERT_TRUE(arranged.has_value());
  uint32_t seen = 0;
  for (const auto& c : *arranged) {
    EXPECT_EQ(model.profiles()[c.profile].name, "1g.24gb");
    EXPECT_EQ(c.placement.size, 3U);
    EXPECT_EQ(seen & PlacementMask(c.placement), 0U) << "overlap at " << c.placement.start;
    seen |= PlacementMask(c.placement);
  }
  EXPECT_EQ(seen, 0xFFFU);
  std::vector<InstanceDemand> five(5, InstanceDemand{8000, 0});
  EXPECT_FALSE(model.Arrange(Layout{}, five).has_value());
}

TEST(GpuMigModelTest, FourGAndThreeGCoexistOnA100) {
  GpuMigModel model(A100Mig("GPU-a"), nullptr);
  auto arranged = model.Arrange(Layout{}, {InstanceDemand{19000, 50}, InstanceDemand{19000, 0}});
  ASSERT_TRUE(arranged.has_value());
  EXPECT_EQ(model.profiles()[(*arranged)[0].profile].name, "4g.20gb");
  EXPECT_EQ((*arranged)[0].placement, (model::Placement{0, 4}));
  EXPECT_EQ(model.profiles()[(*arranged)[1].profile].name, "3g.20gb");
  EXPECT_EQ((*arranged)[1].placement, (model::Placement{4, 4}));
}

TEST(GpuMigModelTest, CoresSelectTheProfile) {
  GpuMigModel model(A100Mig("GPU-a"), nullptr);
  auto arranged = model.Arrange(Layout{}, {InstanceDemand{4000, 40}});
  ASSERT_TRUE(arranged.has_value());
  EXPECT_EQ(model.profiles()[(*arranged)[0].profile].name, "3g.20gb");
}

TEST(GpuMigModelTest, AllowlistRemovesProfilesFromTheChoice) {
  std::vector<std::string> allow = {"1g.10gb", "7g.40gb"};
  GpuMigModel model(A100Mig("GPU-a"), &allow);
  auto arranged = model.Arrange(Layout{}, {InstanceDemand{4000, 0}});
  ASSERT_TRUE(arranged.has_value());
  EXPECT_EQ(model.profiles()[(*arranged)[0].profile].name, "1g.10gb");
  EXPECT_EQ(model.LargestProfileMemory(), 40192);
}

TEST(GpuMigModelTest, KeepsTheLargestFreeBlock) {
  GpuMigModel model(A100Mig("GPU-a"), nullptr);
  Layout layout;
  model.Place(layout, model.ProfileIndex("1g.5gb"), {3, 1});
  auto arranged = model.Arrange(layout, {InstanceDemand{4000, 0}});
  ASSERT_TRUE(arranged.has_value());
  // Next to the taken slice 3, so that slices 4-7 stay one free block of four.
  EXPECT_EQ((*arranged)[0].placement, (model::Placement{2, 1}));
}

TEST(GpuMigModelTest, InstanceLimitAndOverlapAreEnforced) {
  GpuMigModel model(A100Mig("GPU-a"), nullptr);
  const int seven_g = model.ProfileIndex("7g.40gb");
  Layout layout;
  EXPECT_TRUE(model.CanPlace(layout, seven_g, {0, 8}));
  EXPECT_FALSE(model.CanPlace(layout, seven_g, {1, 8})) << "not a listed placement";
  model.Place(layout, seven_g, {0, 8});
  EXPECT_FALSE(model.CanPlace(layout, model.ProfileIndex("1g.5gb"), {6, 1}));
  model.Remove(layout, seven_g, {0, 8});
  EXPECT_EQ(layout, Layout{});
}

TEST(GpuMigModelTest, MediaEngineProfilesAreExclusive) {
  model::GpuDevice d = RtxPro6000Mig("GPU-r");
  d.mig_profiles.push_back(
      testing::Profile("1g.24gb+me", 24192, 25, 1, {{0, 3}, {3, 3}, {6, 3}, {9, 3}}, 1));
  d.mig_profiles.push_back(
      testing::Profile("1g.24gb+me.all", 24192, 25, 1, {{0, 3}, {3, 3}, {6, 3}, {9, 3}}, 1));
  d.mig_profiles.push_back(
      testing::Profile("1g.24gb-me", 24192, 25, 1, {{0, 3}, {3, 3}, {6, 3}, {9, 3}}, 4));
  GpuMigModel model(d, nullptr);
  const int me = model.ProfileIndex("1g.24gb+me");
  const int all = model.ProfileIndex("1g.24gb+me.all");
  const int no_me = model.ProfileIndex("1g.24gb-me");
  const int plain = model.ProfileIndex("1g.24gb");
  Layout layout;
  model.Place(layout, me, {0, 3});
  EXPECT_FALSE(model.CanPlace(layout, me, {3, 3})) << "one +me per GPU";
  EXPECT_FALSE(model.CanPlace(layout, all, {3, 3})) << "+me.all needs every media engine";
  EXPECT_TRUE(model.CanPlace(layout, plain, {3, 3}));
  Layout with_all;
  model.Place(with_all, all, {0, 3});
  EXPECT_FALSE(model.CanPlace(with_all, plain, {3, 3})) << "+me.all blocks all but -me";
  EXPECT_TRUE(model.CanPlace(with_all, no_me, {3, 3}));
}

TEST(GpuMigModelTest, RestrictedProfileListStillAllowsTwoThreeG) {
  // A node whose agent registered only 1g and 3g (an allowlist) says nothing about the GPU's 7
  // compute slices; two 3g instances are still legal.
  model::GpuDevice d = A100Mig("GPU-a");
  d.mig_profiles = {d.mig_profiles[0], d.mig_profiles[3]};
  GpuMigModel model(d, nullptr);
  auto arranged = model.Arrange(Layout{}, {InstanceDemand{19000, 0}, InstanceDemand{19000, 0}});
  ASSERT_TRUE(arranged.has_value());
  EXPECT_EQ((*arranged)[0].placement.start + (*arranged)[1].placement.start, 4U);
}

TEST(GpuMigModelTest, LargestFreeRun) {
  GpuMigModel model(A100Mig("GPU-a"), nullptr);
  Layout layout;
  EXPECT_EQ(model.LargestFreeRun(layout), 8U);
  model.Place(layout, model.ProfileIndex("1g.5gb"), {2, 1});
  EXPECT_EQ(model.LargestFreeRun(layout), 5U);
}

}  // namespace
}  // namespace tessera::mig
