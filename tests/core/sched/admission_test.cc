#include "core/sched/admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/builders.h"

namespace tessera::sched {
namespace {

using testing::ContainerBuilder;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::IsEmpty;
using ::testing::Key;
using ::testing::Not;
using ::testing::Pair;
using testing::PodBuilder;
using ::testing::UnorderedElementsAre;

auto Change(bool init, size_t container, const std::string& resource, const std::string& value) {
  return ::testing::AllOf(
      Field(&AdmissionChange::init, init), Field(&AdmissionChange::container, container),
      Field(&AdmissionChange::resource, resource), Field(&AdmissionChange::value, value));
}

model::Pod PodWith(const model::Container& c) { return PodBuilder("ns/p").With(c).Build(); }

TEST(ApplyAdmissionDefaultsTest, PodWithoutGpuResourcesIsUnchanged) {
  const model::Pod pod = PodWith(ContainerBuilder("c").Limit("cpu", "1").Build());
  auto out = ApplyAdmissionDefaults(pod, {});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_FALSE(out->has_gpu);
  EXPECT_THAT(out->changes, IsEmpty());
  EXPECT_EQ(out->pod.containers[0].limits, pod.containers[0].limits);
}

TEST(ApplyAdmissionDefaultsTest, CountAloneBecomesAnExclusiveCard) {
  auto out = ApplyAdmissionDefaults(PodWith(ContainerBuilder("c").Gpu(1).Build()), {});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(out->has_gpu);
  EXPECT_THAT(out->pod.containers[0].limits,
              ElementsAre(Pair("nvidia.com/gpu", "1"), Pair("nvidia.com/gpucores", "100")));
  EXPECT_THAT(out->changes, ElementsAre(Change(false, 0, "nvidia.com/gpucores", "100")));
}

TEST(ApplyAdmissionDefaultsTest, CountWithMemoryIsNotMadeExclusive) {
  auto out = ApplyAdmissionDefaults(PodWith(ContainerBuilder("c").Gpu(1).GpuMem(3000).Build()), {});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(out->has_gpu);
  EXPECT_THAT(out->pod.containers[0].limits, Not(::testing::Contains(Key("nvidia.com/gpucores"))));
  EXPECT_THAT(out->changes, IsEmpty());
}

TEST(ApplyAdmissionDefaultsTest, CountWithRequestedMemoryIsNotMadeExclusive) {
  auto out = ApplyAdmissionDefaults(
      PodWith(ContainerBuilder("c").Gpu(1).Request("nvidia.com/gpumem", "3000").Build()), {});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_THAT(out->changes, IsEmpty());
}

TEST(ApplyAdmissionDefaultsTest, CountWithExplicitCoresIsNotMadeExclusive) {
  auto out = ApplyAdmissionDefaults(
      PodWith(ContainerBuilder("c").Gpu(1).Request("nvidia.com/gpucores", "30").Build()), {});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(out->has_gpu);
  EXPECT_THAT(out->changes, IsEmpty());
}

TEST(ApplyAdmissionDefaultsTest, FullPercentageMakesTheCardExclusive) {
  for (const char* pct : {"100", "1e2", "100.0"}) {
    SCOPED_TRACE(pct);
    auto out = ApplyAdmissionDefaults(
        PodWith(ContainerBuilder("c").Gpu(1).Limit("nvidia.com/gpumem-percentage", pct).Build()),
        {});
    ASSERT_TRUE(out.ok()) << out.error().message;
    EXPECT_THAT(out->changes, ElementsAre(Change(false, 0, "nvidia.com/gpucores", "100")));
  }
}

TEST(ApplyAdmissionDefaultsTest, PartialPercentageIsNotMadeExclusive) {
  auto out =
      ApplyAdmissionDefaults(PodWith(ContainerBuilder("c").Gpu(1).GpuMemPercent(50).Build()), {});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(out->has_gpu);
  EXPECT_THAT(out->changes, IsEmpty());
}

TEST(ApplyAdmissionDefaultsTest, PartialPercentageDecidesEvenWithoutAMemoryResourceName) {
  config::NvidiaConfig config;
  config.resource_memory_name = "";
  auto out = ApplyAdmissionDefaults(PodWith(ContainerBuilder("c").Gpu(1).GpuMemPercent(50).Build()),
                                    config);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_THAT(out->changes, IsEmpty());
}

TEST(ApplyAdmissionDefaultsTest, NoMemoryResourceNameMakesACountExclusive) {
  config::NvidiaConfig config;
  config.resource_memory_name = "";
  auto out = ApplyAdmissionDefaults(
      PodWith(ContainerBuilder("c").Gpu(1).Limit("nvidia.com/gpumem", "3000").Build()), config);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_THAT(out->changes, ElementsAre(Change(false, 0, "nvidia.com/gpucores", "100")));
}

TEST(ApplyAdmissionDefaultsTest, MemoryWithoutCountGetsDefaultGpuNum) {
  config::NvidiaConfig config;
  config.default_gpu_num = 2;
  auto out = ApplyAdmissionDefaults(PodWith(ContainerBuilder("c").GpuMem(3000).Build()), config);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(out->has_gpu);
  EXPECT_THAT(out->pod.containers[0].limits,
              ElementsAre(Pair("nvidia.com/gpu", "2"), Pair("nvidia.com/gpumem", "3000")));
  EXPECT_THAT(out->changes, ElementsAre(Change(false, 0, "nvidia.com/gpu", "2")));
}

TEST(ApplyAdmissionDefaultsTest, CoresWithoutCountGetDefaultGpuNumAndStayShared) {
  auto out = ApplyAdmissionDefaults(PodWith(ContainerBuilder("c").GpuCores(30).Build()), {});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_THAT(out->pod.containers[0].limits,
              ElementsAre(Pair("nvidia.com/gpu", "1"), Pair("nvidia.com/gpucores", "30")));
  EXPECT_THAT(out->changes, ElementsAre(Change(false, 0, "nvidia.com/gpu", "1")));
}

TEST(ApplyAdmissionDefaultsTest, PercentageWithoutCountGetsCountAndThenExclusiveCores) {
  auto out = ApplyAdmissionDefaults(PodWith(ContainerBuilder("c").GpuMemPercent(100).Build()), {});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_THAT(out->changes, ElementsAre(Change(false, 0, "nvidia.com/gpu", "1"),
                                        Change(false, 0, "nvidia.com/gpucores", "100")));
}

TEST(ApplyAdmissionDefaultsTest, ZeroDefaultGpuNumLeavesMemoryOnlyContainerWithoutGpu) {
  config::NvidiaConfig config;
  config.default_gpu_num = 0;
  auto out = ApplyAdmissionDefaults(PodWith(ContainerBuilder("c").GpuMem(3000).Build()), config);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_FALSE(out->has_gpu);
  EXPECT_THAT(out->changes, IsEmpty());
}

TEST(ApplyAdmissionDefaultsTest, RequestedOnlyMemoryDoesNotGetADefaultCount) {
  auto out = ApplyAdmissionDefaults(
      PodWith(ContainerBuilder("c").Request("nvidia.com/gpumem", "3000").Build()), {});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_FALSE(out->has_gpu);
  EXPECT_THAT(out->changes, IsEmpty());
}

TEST(ApplyAdmissionDefaultsTest, RequestedCountAloneBecomesAnExclusiveCard) {
  auto out = ApplyAdmissionDefaults(
      PodWith(ContainerBuilder("c").Request("nvidia.com/gpu", "1").Build()), {});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(out->has_gpu);
  EXPECT_THAT(out->changes, ElementsAre(Change(false, 0, "nvidia.com/gpucores", "100")));
}

TEST(ApplyAdmissionDefaultsTest, UsesConfiguredResourceNames) {
  config::NvidiaConfig config;
  config.resource_count_name = "hami.io/gpu";
  config.resource_core_name = "hami.io/gpucores";
  auto out = ApplyAdmissionDefaults(
      PodWith(ContainerBuilder("c").Limit("hami.io/gpu", "1").Build()), config);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_THAT(out->changes, ElementsAre(Change(false, 0, "hami.io/gpucores", "100")));
}

TEST(ApplyAdmissionDefaultsTest, ChangesNameInitAndAppContainersByPosition) {
  model::Pod pod =
      PodBuilder("ns/p").InitContainer(0).InitContainer(1).Container(0).Container(1).Build();
  auto out = ApplyAdmissionDefaults(pod, {});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_THAT(out->changes, ElementsAre(Change(true, 1, "nvidia.com/gpucores", "100"),
                                        Change(false, 1, "nvidia.com/gpucores", "100")));
  EXPECT_THAT(out->pod.init_containers[1].limits, ::testing::Contains(Key("nvidia.com/gpucores")));
  EXPECT_THAT(out->pod.containers[1].limits, ::testing::Contains(Key("nvidia.com/gpucores")));
}

TEST(ApplyAdmissionDefaultsTest, DoesNotChangeTheInputPod) {
  const model::Pod pod = PodWith(ContainerBuilder("c").Gpu(1).Build());
  auto out = ApplyAdmissionDefaults(pod, {});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_THAT(pod.containers[0].limits, UnorderedElementsAre(Pair("nvidia.com/gpu", "1")));
}

TEST(ApplyAdmissionDefaultsTest, PercentageOutsideZeroToHundredIsAnErrorNamingTheContainer) {
  for (const char* pct : {"101", "-1", "150", "0.5", "abc"}) {
    SCOPED_TRACE(pct);
    auto out = ApplyAdmissionDefaults(
        PodWith(
            ContainerBuilder("trainer").Gpu(1).Limit("nvidia.com/gpumem-percentage", pct).Build()),
        {});
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.error().message, std::string("invalid nvidia.com/gpumem-percentage value ") +
                                       pct +
                                       " in container trainer: must be an integer between 0 and "
                                       "100");
  }
}

TEST(ApplyAdmissionDefaultsTest, PercentageIsValidatedInRequestsAndWithoutACount) {
  auto out = ApplyAdmissionDefaults(
      PodWith(ContainerBuilder("c").Request("nvidia.com/gpumem-percentage", "200").Build()), {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message,
            "invalid nvidia.com/gpumem-percentage value 200 in container c: must be an integer "
            "between 0 and 100");
}

TEST(ApplyAdmissionDefaultsTest, PercentageBoundsAreAccepted) {
  for (const char* pct : {"0", "100"}) {
    SCOPED_TRACE(pct);
    auto out = ApplyAdmissionDefaults(
        PodWith(ContainerBuilder("c").Gpu(1).Limit("nvidia.com/gpumem-percentage", pct).Build()),
        {});
    EXPECT_TRUE(out.ok()) << out.error().message;
  }
}

TEST(ApplyAdmissionDefaultsTest, PrivilegedContainerInAGpuPodIsDenied) {
  model::Container privileged = ContainerBuilder("debug").Build();
  privileged.privileged = true;
  model::Pod pod = PodBuilder("ns/p").Container(1).With(privileged).Build();
  auto out = ApplyAdmissionDefaults(pod, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message, "container debug is privileged");
}

TEST(ApplyAdmissionDefaultsTest, PrivilegedInitContainerInAGpuPodIsDenied) {
  model::Pod pod = PodBuilder("ns/p").InitContainer(0).Container(1).Build();
  pod.init_containers[0].privileged = true;
  auto out = ApplyAdmissionDefaults(pod, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message, "container init0 is privileged");
}

TEST(ApplyAdmissionDefaultsTest, PrivilegedContainerWithoutGpuIsAllowed) {
  model::Pod pod = PodBuilder("ns/p").Container(0).Build();
  pod.containers[0].privileged = true;
  auto out = ApplyAdmissionDefaults(pod, {});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_FALSE(out->has_gpu);
}

TEST(AdmissionQuotaUseTest, LargerOfAppSumAndInitPeakWithPercentagesCountingZero) {
  PodRequest r;
  r.num_init = 2;
  r.slots = {{1, 9000, kMemPercentUnset, 10},
             {2, 1000, kMemPercentUnset, 60},
             {1, 3000, kMemPercentUnset, 20},
             {2, 2000, kMemPercentUnset, 5},
             {1, 0, 50, 30}};
  const state::QuotaUse use = AdmissionQuotaUse(r);
  EXPECT_EQ(use.mem, 9000);   // init peak 9000 beats the app sum 3000 + 4000 + 0
  EXPECT_EQ(use.cores, 120);  // init peak 2 x 60 beats the app sum 20 + 10 + 30
}

}  // namespace
}  // namespace tessera::sched
