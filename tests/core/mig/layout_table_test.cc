// The layout tables against brute force, over every reachable state of every built-in model.
#include "core/mig/layout_table.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>
#include <vector>

#include "core/mig/catalog.h"
#include "support/builders.h"

namespace tessera::mig {
namespace {

// Is there any (eligible profile, placement) for `demand` on `layout`? Exhaustive.
bool AnyPlacement(const GpuMigModel& model, const Layout& layout, const InstanceDemand& demand) {
  for (int p : model.EligibleProfiles(demand)) {
    for (const auto& pl : model.profiles()[p].placements) {
      if (model.CanPlace(layout, p, pl)) return true;
    }
  }
  return false;
}

TEST(LayoutTableTest, EveryReachableStateOfEveryModelAgreesWithBruteForce) {
  auto catalog = GpuModelCatalog::Builtin();
  ASSERT_TRUE(catalog.ok());
  int models = 0;
  size_t states_checked = 0;
  for (const auto& spec : catalog->models()) {
    if (!spec.complete) continue;
    SCOPED_TRACE(spec.model);
    ++models;
    const model::GpuDevice device = testing::MigDeviceOf(spec, "GPU-" + spec.model);
    GpuMigModel model(device, nullptr);
    auto table = std::make_shared<const LayoutTable>(model);
    ASSERT_TRUE(table->complete());
    ASSERT_GT(table->size(), 1U);
    model.set_table(table);
    // Uniform weights over the profiles: the goal-driven Arrange is exercised on every state.
    const std::vector<double> weights(model.profiles().size(), 1.0);
    const ArrangeGoal goal{&weights, false, {}};
    for (const Layout& layout : table->states()) {
      ASSERT_NE(table->Find(layout), nullptr);
      // The room the table stores is the room an exhaustive search finds.
      ASSERT_EQ(*table->Find(layout), model.ComputeRoom(layout));
      for (size_t p = 0; p < model.profiles().size(); ++p) {
        const auto& profile = model.profiles()[p];
        const InstanceDemand demand{profile.memory_mib, 0};
        const bool oracle = AnyPlacement(model, layout, demand);
        auto arranged = model.Arrange(layout, {demand}, goal);
        // No false "infeasible", no false "feasible".
        ASSERT_EQ(arranged.has_value(), oracle) << profile.name;
        if (!arranged) continue;
        const InstanceChoice& c = (*arranged)[0];
        // Legal: listed placement, no overlap, limits and media engines (CanPlace checks all).
        ASSERT_TRUE(model.CanPlace(layout, c.profile, c.placement)) << profile.name;
        // The smallest covering profile that can be placed (larger ones are not allowed here).
        for (int q : model.EligibleProfiles(demand)) {
          if (model.profiles()[q].memory_mib >= model.profiles()[c.profile].memory_mib) break;
          for (const auto& pl : model.profiles()[q].placements) {
            ASSERT_FALSE(model.CanPlace(layout, q, pl)) << "smaller " << model.profiles()[q].name;
          }
        }
      }
      ++states_checked;
    }
  }
  EXPECT_GE(models, 10);
  EXPECT_GT(states_checked, 1000U);
}

TEST(LayoutTableTest, RoomCountsInstancesOfOneProfileAlone) {
  GpuMigModel model(testing::A100Mig("GPU-a"), nullptr);
  LayoutTable table(model);
  const int one_g = model.ProfileIndex("1g.5gb");
  const int four_g = model.ProfileIndex("4g.20gb");
  const int seven_g = model.ProfileIndex("7g.40gb");
  const ProfileRoom* empty = table.Find(Layout{});
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ((*empty)[one_g], 7);
  EXPECT_EQ((*empty)[four_g], 1);
  EXPECT_EQ((*empty)[seven_g], 1);
  Layout layout;
  model.Place(layout, one_g, {6, 1});
  const ProfileRoom* after = table.Find(layout);
  ASSERT_NE(after, nullptr);
  EXPECT_EQ((*after)[one_g], 6);
  EXPECT_EQ((*after)[four_g], 1);  // 4g sits at slices 0-3
  EXPECT_EQ((*after)[seven_g], 0);
}

TEST(LayoutTableTest, UnreachableLayoutIsNotFound) {
  GpuMigModel model(testing::A100Mig("GPU-a"), nullptr);
  LayoutTable table(model);
  Layout bogus;
  bogus.occupied = 0x1;  // a slice in use with no instance counted
  EXPECT_EQ(table.Find(bogus), nullptr);
  // The model still answers, by computing.
  EXPECT_EQ(model.Room(bogus)[model.ProfileIndex("7g.40gb")], 0);
}

// docs/placement.md's worked example: an empty A100-40GB, a 1g wanted, half of future requests
// 1g and half 4g. The largest-free-block rule puts the 1g at slice 0 (a free run of 7) and the
// 4g can no longer be placed; the placeability goal keeps 4g@0 free.
TEST(PlaceabilityTest, OneGLeavesTheFourGPlacementFree) {
  GpuMigModel model(testing::A100Mig("GPU-a"), nullptr);
  std::vector<double> weights(model.profiles().size(), 0.0);
  weights[model.ProfileIndex("1g.5gb")] = 0.5;
  weights[model.ProfileIndex("4g.20gb")] = 0.5;
  const ArrangeGoal goal{&weights, false, {}};
  ArrangeScore score;
  auto arranged = model.Arrange(Layout{}, {InstanceDemand{4000, 0}}, goal, &score);
  ASSERT_TRUE(arranged.has_value());
  // A 1g in slices 4-6 keeps 4g@0; one in 0-3 would not. Slice 7 is stranded either way (no 1g
  // or 4g covers it), which costs its memory.
  EXPECT_GE((*arranged)[0].placement.start, 4U);
  EXPECT_DOUBLE_EQ(score.placeability, 0.5 * 6 + 0.5 * 1 - model.SliceGib() * 1);
  auto greedy = model.Arrange(Layout{}, {InstanceDemand{4000, 0}});
  ASSERT_TRUE(greedy.has_value());
  EXPECT_EQ((*greedy)[0].placement.start, 0U);
}

// Room counts each profile on its own; stranded slices see what it misses. With 1g and 3g in the
// mix, a 1g at slice 6 keeps the same room as one at slice 0 (six 1g, one 3g) but leaves slice 7
// to the 3g at 4-7 it blocked; at slice 0 the 3g at 4-7 still covers it.
TEST(PlaceabilityTest, AOneGDoesNotStrandTheLastSliceOfAnA100) {
  GpuMigModel model(testing::A100Mig("GPU-a"), nullptr);
  std::vector<double> weights(model.profiles().size(), 0.0);
  weights[model.ProfileIndex("1g.5gb")] = 0.6;
  weights[model.ProfileIndex("3g.20gb")] = 0.8;
  Layout at6;
  model.Place(at6, model.ProfileIndex("1g.5gb"), {6, 1});
  Layout at0;
  model.Place(at0, model.ProfileIndex("1g.5gb"), {0, 1});
  EXPECT_EQ(model.Stranded(at6, weights).memory, 1U);
  EXPECT_EQ(model.Stranded(at0, weights).memory, 0U);
  EXPECT_EQ(model.Stranded(Layout{}, weights).memory, 0U);
  // Without a 3g in the mix, slice 7 is of no use to anything placeable.
  std::vector<double> only_1g(model.profiles().size(), 0.0);
  only_1g[model.ProfileIndex("1g.5gb")] = 1;
  EXPECT_EQ(model.Stranded(Layout{}, only_1g).memory, 1U);
  EXPECT_GT(model.Placeability(at0, weights), model.Placeability(at6, weights));
  ArrangeScore score;
  auto arranged = model.Arrange(Layout{}, {InstanceDemand{4000, 0}}, {&weights, false, {}}, &score);
  ASSERT_TRUE(arranged.has_value());
  EXPECT_LE((*arranged)[0].placement.start, 3U);
  EXPECT_NEAR(model.SliceGib(), 40192.0 / 8 / 1024, 1e-12);
}

// A stranded slice leaves compute idle only when the free compute is more than the coverable
// memory can hold. An H100 with a 4g at 0-3 and a 2g at 4-5 strands slice 7 (only the 3g at 4-7
// and the 7g cover it), but its last compute slice still fits the 1g at 6. An A100-40GB with a 3g
// at 0-3 and a 1g at 6 strands slice 7 and keeps three compute slices for two coverable slices.
// Weight 1 for each named profile, 0 for the others.
std::vector<double> WeightsFor(const GpuMigModel& model, std::initializer_list<const char*> names) {
  std::vector<double> weights(model.profiles().size(), 0.0);
  for (const char* name : names) weights[model.ProfileIndex(name)] = 1;
  return weights;
}

// A layout of (profile, start) instances, each at its profile's size.
Layout LayoutOf(const GpuMigModel& model,
                std::initializer_list<std::pair<const char*, uint32_t>> instances) {
  Layout layout;
  for (const auto& [name, start] : instances) {
    const int p = model.ProfileIndex(name);
    model.Place(layout, p, {start, model.profiles()[p].placements.front().size});
  }
  return layout;
}

TEST(PlaceabilityTest, StrandedMemoryIdlesComputeOnlyWhenNothingCanUseIt) {
  auto catalog = GpuModelCatalog::Builtin();
  ASSERT_TRUE(catalog.ok());
  const GpuModelSpec* h100_spec = catalog->Find("H100-SXM5-80GB");
  ASSERT_NE(h100_spec, nullptr);
  GpuMigModel h100(testing::MigDeviceOf(*h100_spec, "GPU-h"), nullptr);
  const std::vector<double> h100_weights =
      WeightsFor(h100, {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"});
  const Layout full_compute = LayoutOf(h100, {{"4g.40gb", 0}, {"2g.20gb", 4}});
  ASSERT_EQ(full_compute.compute_used, 6U);
  EXPECT_EQ(h100.Stranded(full_compute, h100_weights).memory, 1U);
  EXPECT_EQ(h100.Stranded(full_compute, h100_weights).idle_compute, 0U);

  GpuMigModel a100(testing::A100Mig("GPU-a"), nullptr);
  const std::vector<double> a100_weights = WeightsFor(a100, {"1g.5gb", "3g.20gb"});
  const Layout idle = LayoutOf(a100, {{"3g.20gb", 0}, {"1g.5gb", 6}});
  ASSERT_EQ(idle.compute_used, 4U);
  EXPECT_EQ(a100.Stranded(idle, a100_weights).memory, 1U);
  EXPECT_EQ(a100.Stranded(idle, a100_weights).idle_compute, 1U);

  // Valued: the idle-compute part is added on top of the memory part.
  const StrandedValue value{2.0, 3.0};
  EXPECT_DOUBLE_EQ(h100.Placeability(full_compute, h100_weights, StrandedValue{0, 0}) -
                       h100.Placeability(full_compute, h100_weights, value),
                   2.0);
  EXPECT_DOUBLE_EQ(a100.Placeability(idle, a100_weights, StrandedValue{0, 0}) -
                       a100.Placeability(idle, a100_weights, value),
                   5.0);
  EXPECT_EQ(CountStranded(3, 5, 4).idle_compute, 1U);
  EXPECT_EQ(CountStranded(1, 5, 1).idle_compute, 1U);  // never more than the stranded memory
  EXPECT_EQ(CountStranded(2, 1, 3).idle_compute, 0U);
}

// CountStranded assumes an instance takes at least one memory slice per compute slice: true of
// every profile of every built-in model.
TEST(PlaceabilityTest, NoProfileHasMoreComputeThanMemorySlices) {
  auto catalog = GpuModelCatalog::Builtin();
  ASSERT_TRUE(catalog.ok());
  for (const auto& spec : catalog->models()) {
    for (const auto& profile : spec.profiles) {
      for (const auto& placement : profile.placements) {
        EXPECT_GE(placement.size, profile.slice_count) << spec.model << " " << profile.name;
      }
    }
  }
}

// A100-80GB and H100-80GB have the same profile names and placements but different memory per
// profile: a request maps to different profiles on them, so they must not share a table (the
// scheduler keys demand weights and cached arrangements by it).
TEST(LayoutTableTest, ModelsWithDifferentProfileMemoryHaveDifferentRules) {
  auto catalog = GpuModelCatalog::Builtin();
  ASSERT_TRUE(catalog.ok());
  const GpuModelSpec* a100 = catalog->Find("A100-80GB");
  const GpuModelSpec* h100 = catalog->Find("H100-SXM5-80GB");
  ASSERT_NE(a100, nullptr);
  ASSERT_NE(h100, nullptr);
  GpuMigModel a(testing::MigDeviceOf(*a100, "GPU-a"), nullptr);
  GpuMigModel h(testing::MigDeviceOf(*h100, "GPU-h"), nullptr);
  ASSERT_NE(a.profiles()[0].memory_mib, h.profiles()[0].memory_mib);
  EXPECT_NE(a.RulesKey(), h.RulesKey());
  GpuMigModel a2(testing::MigDeviceOf(*a100, "GPU-a"), nullptr);
  EXPECT_EQ(a.RulesKey(), a2.RulesKey());
}

}  // namespace
}  // namespace tessera::mig
