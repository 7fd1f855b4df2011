#include "core/sched/cycle_state.h"

#include <gtest/gtest.h>

#include "support/builders.h"

namespace tessera::sched {
namespace {

using testing::PodBuilder;

config::NvidiaConfig Nvidia() { return config::NvidiaConfig{}; }

TEST(ParsePodTest, AGpuPodGetsItsRequestPreferencesAndModeOnce) {
  auto parsed = ParsePod(PodBuilder("ns/p")
                             .Container(2, 8000)
                             .MigMode()
                             .Annotation("nvidia.com/use-gputype", " A100 , H100 ")
                             .Build(),
                         Nvidia(), PolicyDefaults{});
  ASSERT_TRUE(parsed.request.ok()) << parsed.request.error().message;
  EXPECT_EQ(parsed.request->slots.at(0).nums, 2);
  ASSERT_TRUE(parsed.prefs.has_value());
  ASSERT_TRUE(parsed.prefs->ok());
  EXPECT_EQ(parsed.prefs->value().vgpu_mode, VgpuMode::kMig);
  ASSERT_TRUE(parsed.vgpu_mode.ok());
  EXPECT_EQ(parsed.vgpu_mode.value(), VgpuMode::kMig);
  EXPECT_EQ(parsed.demand_type, "A100,H100");
}

TEST(ParsePodTest, APodWithoutGpusIsNotAskedForPreferences) {
  // HAMi passes such a pod through whatever its annotations say.
  auto parsed =
      ParsePod(PodBuilder("ns/p").Annotation("hami.io/node-scheduler-policy", "nonsense").Build(),
               Nvidia(), PolicyDefaults{});
  ASSERT_TRUE(parsed.request.ok());
  EXPECT_FALSE(parsed.request->HasGpu());
  EXPECT_FALSE(parsed.prefs.has_value());
}

TEST(ParsePodTest, TheModeIsKnownWhenAnotherAnnotationIsMalformed) {
  // The demand mix still counts the pod's MIG demand (as before the cycle state existed).
  auto parsed = ParsePod(PodBuilder("ns/p")
                             .Container(1, 4000)
                             .MigMode()
                             .Annotation("hami.io/node-scheduler-policy", "nonsense")
                             .Build(),
                         Nvidia(), PolicyDefaults{});
  ASSERT_TRUE(parsed.prefs.has_value());
  ASSERT_FALSE(parsed.prefs->ok());
  EXPECT_NE(parsed.prefs->error().message.find("hami.io/node-scheduler-policy"), std::string::npos);
  ASSERT_TRUE(parsed.vgpu_mode.ok());
  EXPECT_EQ(parsed.vgpu_mode.value(), VgpuMode::kMig);
}

TEST(ParsePodTest, AMalformedModeIsAnErrorEvenWithoutGpus) {
  auto parsed = ParsePod(PodBuilder("ns/p").Annotation("nvidia.com/vgpu-mode", "migx").Build(),
                         Nvidia(), PolicyDefaults{});
  EXPECT_FALSE(parsed.vgpu_mode.ok());
}

struct Cycle {
  explicit Cycle(const model::Pod& pod, bool observed = true, PolicyDefaults policy = {})
      : defaults(std::move(policy)), parsed(ParsePod(pod, config::NvidiaConfig{}, defaults)) {
    if (observed) mix.Observe(DemandShape{1, 4000, 10, 0, ""});
    state.emplace(parsed.request.value(), parsed.prefs->value(), parsed.cpu_milli, mix, mig_mix,
                  defaults);
  }
  PolicyDefaults defaults;  // outlives the cycle state, which refers to it
  ParsedPod parsed;
  DemandMix mix;
  MigDemandMix mig_mix;
  std::optional<CycleState> state;
};

TEST(CycleStateTest, OneSharedGpuIsRankedByFragmentationOnceThereIsAMix) {
  Cycle with(PodBuilder("ns/p").Container(1, 4000).Build());
  EXPECT_TRUE(with.state->tessera_nodes());
  EXPECT_TRUE(with.state->by_fragmentation());
  EXPECT_TRUE(with.state->rank_gpus());
  ASSERT_NE(with.state->single(), nullptr);
  EXPECT_EQ(with.state->single()->mem_mib, 4000);
  EXPECT_NE(with.state->mig_goal(), nullptr);
  EXPECT_TRUE(with.state->cacheable());

  Cycle without(PodBuilder("ns/p").Container(1, 4000).Build(), /*observed=*/false);
  EXPECT_FALSE(without.state->by_fragmentation());
  EXPECT_FALSE(without.state->rank_gpus());
  EXPECT_EQ(without.state->single(), nullptr);
}

TEST(CycleStateTest, SeveralGpusOrMigOnlyAreNotRankedPerGpu) {
  Cycle two(PodBuilder("ns/p").Container(2, 4000).Build());
  EXPECT_FALSE(two.state->rank_gpus());
  Cycle two_containers(PodBuilder("ns/p").Container(1, 4000).Container(1, 4000).Build());
  EXPECT_FALSE(two_containers.state->rank_gpus());
  Cycle mig(PodBuilder("ns/p").Container(1, 4000).MigMode().Build());
  EXPECT_FALSE(mig.state->rank_gpus());
  EXPECT_TRUE(mig.state->by_fragmentation());
}

TEST(CycleStateTest, NamedHamiPoliciesTurnTesseraRankingsOff) {
  Cycle binpack(PodBuilder("ns/p")
                    .Container(1, 4000)
                    .Annotation("hami.io/node-scheduler-policy", "binpack")
                    .Annotation("hami.io/gpu-scheduler-policy", "binpack")
                    .Build());
  EXPECT_FALSE(binpack.state->tessera_nodes());
  EXPECT_FALSE(binpack.state->by_fragmentation());
  EXPECT_FALSE(binpack.state->rank_gpus());
  EXPECT_EQ(binpack.state->mig_goal(), nullptr);
}

TEST(CycleStateTest, UuidFiltersMakeTheAnswerNodeSpecific) {
  Cycle use(
      PodBuilder("ns/p").Container(1, 4000).Annotation("nvidia.com/use-gpuuuid", "GPU-a").Build());
  EXPECT_FALSE(use.state->cacheable());
  Cycle nouse(PodBuilder("ns/p")
                  .Container(1, 4000)
                  .Annotation("nvidia.com/nouse-gpuuuid", "GPU-a")
                  .Build());
  EXPECT_FALSE(nouse.state->cacheable());
}

TEST(CycleStateTest, TheMigGoalFollowsTheDefaults) {
  PolicyDefaults defaults;
  defaults.mig_allow_larger_profiles = true;
  Cycle c(PodBuilder("ns/p").Container(1, 4000).MigMode().Build(), true, defaults);
  ASSERT_NE(c.state->mig_goal(), nullptr);
  EXPECT_TRUE(c.state->mig_goal()->allow_larger_profiles);
  EXPECT_NE(c.state->mig_goal()->cache, nullptr);
  EXPECT_NE(c.state->mig_goal()->weights, nullptr);
}

}  // namespace
}  // namespace tessera::sched
