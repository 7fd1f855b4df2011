#include "core/sched/request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/builders.h"

namespace tessera::sched {
namespace {

using testing::ContainerBuilder;
using ::testing::ElementsAre;
using testing::PodBuilder;

ContainerRequest Req(int32_t nums, int32_t mem, int32_t pct, int32_t cores) {
  return ContainerRequest{nums, mem, pct, cores};
}

// --- DeriveContainerRequest ------------------------------------------------------------------

TEST(DeriveContainerRequestTest, ContainerWithoutGpuResourcesHasAnEmptyRequest) {
  auto r = DeriveContainerRequest(ContainerBuilder("c").Limit("cpu", "2").Build(), {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, ContainerRequest{});
  EXPECT_TRUE(r->Empty());
}

TEST(DeriveContainerRequestTest, CountAloneAsksForAllOfEachGpusMemory) {
  auto r = DeriveContainerRequest(ContainerBuilder("c").Gpu(2).Build(), {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Req(2, 0, 100, 0));
}

TEST(DeriveContainerRequestTest, ReadsCountMemoryAndCores) {
  auto r =
      DeriveContainerRequest(ContainerBuilder("c").Gpu(1).GpuMem(3000).GpuCores(30).Build(), {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Req(1, 3000, kMemPercentUnset, 30));
}

TEST(DeriveContainerRequestTest, ReadsMemoryPercentage) {
  auto r = DeriveContainerRequest(ContainerBuilder("c").Gpu(1).GpuMemPercent(50).Build(), {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Req(1, 0, 50, 0));
}

TEST(DeriveContainerRequestTest, ZeroPercentageCountsAsUnset) {
  auto r = DeriveContainerRequest(ContainerBuilder("c").Gpu(1).GpuMemPercent(0).Build(), {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Req(1, 0, 100, 0));
}

TEST(DeriveContainerRequestTest, ExplicitZeroCountIsAnEmptyRequest) {
  auto r = DeriveContainerRequest(ContainerBuilder("c").Gpu(0).GpuMem(1000).Build(), {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->Empty());
  EXPECT_EQ(*r, ContainerRequest{});
}

TEST(DeriveContainerRequestTest, LimitsTakePrecedenceOverRequests) {
  const model::Container c = ContainerBuilder("c")
                                 .Limit("nvidia.com/gpu", "2")
                                 .Request("nvidia.com/gpu", "1")
                                 .Limit("nvidia.com/gpumem", "4000")
                                 .Request("nvidia.com/gpumem", "1000")
                                 .Limit("nvidia.com/gpucores", "40")
                                 .Request("nvidia.com/gpucores", "10")
                                 .Build();
  auto r = DeriveContainerRequest(c, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Req(2, 4000, kMemPercentUnset, 40));
}

TEST(DeriveContainerRequestTest, RequestsAreUsedWhenLimitsAreAbsent) {
  const model::Container c = ContainerBuilder("c")
                                 .Request("nvidia.com/gpu", "1")
                                 .Request("nvidia.com/gpumem-percentage", "25")
                                 .Request("nvidia.com/gpucores", "10")
                                 .Build();
  auto r = DeriveContainerRequest(c, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Req(1, 0, 25, 10));
}

TEST(DeriveContainerRequestTest, UsesConfiguredResourceNames) {
  config::NvidiaConfig config;
  config.resource_count_name = "hami.io/gpu";
  config.resource_memory_name = "hami.io/gpumem";
  config.resource_memory_percentage_name = "hami.io/gpumem-percentage";
  config.resource_core_name = "hami.io/gpucores";
  const model::Container c = ContainerBuilder("c")
                                 .Limit("hami.io/gpu", "1")
                                 .Limit("hami.io/gpumem", "2000")
                                 .Limit("hami.io/gpucores", "20")
                                 .Limit("nvidia.com/gpu", "4")
                                 .Build();
  auto r = DeriveContainerRequest(c, config);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Req(1, 2000, kMemPercentUnset, 20));
}

TEST(DeriveContainerRequestTest, DefaultMemoryReplacesTheWholeCardWhenNoMemoryIsAsked) {
  config::NvidiaConfig config;
  config.default_memory = 2048;
  auto r = DeriveContainerRequest(ContainerBuilder("c").Gpu(1).Build(), config);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Req(1, 2048, kMemPercentUnset, 0));
}

TEST(DeriveContainerRequestTest, DefaultMemoryDoesNotOverrideAPercentage) {
  config::NvidiaConfig config;
  config.default_memory = 2048;
  auto r = DeriveContainerRequest(ContainerBuilder("c").Gpu(1).GpuMemPercent(30).Build(), config);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Req(1, 0, 30, 0));
}

TEST(DeriveContainerRequestTest, DefaultCoresApplyWhenNoCoresAreAsked) {
  config::NvidiaConfig config;
  config.default_cores = 25;
  auto r = DeriveContainerRequest(ContainerBuilder("c").Gpu(1).GpuMem(1000).Build(), config);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Req(1, 1000, kMemPercentUnset, 25));
}

TEST(DeriveContainerRequestTest, ExplicitCoresOverrideDefaultCores) {
  config::NvidiaConfig config;
  config.default_cores = 25;
  auto r = DeriveContainerRequest(ContainerBuilder("c").Gpu(1).GpuCores(0).Build(), config);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Req(1, 0, 100, 0));
}

TEST(DeriveContainerRequestTest, DefaultGpuNumAppliesWhenOnlyMemoryOrCoresAreLimited) {
  config::NvidiaConfig config;
  config.default_gpu_num = 2;
  const std::vector<model::Container> containers = {
      ContainerBuilder("mem").GpuMem(1000).Build(),
      ContainerBuilder("pct").GpuMemPercent(50).Build(),
      ContainerBuilder("cores").GpuCores(30).Build(),
  };
  for (const auto& c : containers) {
    SCOPED_TRACE(c.name);
    auto r = DeriveContainerRequest(c, config);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->nums, 2);
  }
}

TEST(DeriveContainerRequestTest, DefaultGpuNumIgnoresResourcesThatAreOnlyRequested) {
  config::NvidiaConfig config;
  config.default_gpu_num = 2;
  auto r = DeriveContainerRequest(
      ContainerBuilder("c").Request("nvidia.com/gpumem", "1000").Build(), config);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, ContainerRequest{});
}

TEST(DeriveContainerRequestTest, ZeroDefaultGpuNumLeavesAMemoryOnlyContainerWithoutGpu) {
  config::NvidiaConfig config;
  config.default_gpu_num = 0;
  auto r = DeriveContainerRequest(ContainerBuilder("c").GpuMem(1000).Build(), config);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, ContainerRequest{});
}

TEST(DeriveContainerRequestTest, MemoryFactorMultipliesTheMemoryResource) {
  config::NvidiaConfig config;
  config.memory_factor = 1024;
  auto r = DeriveContainerRequest(ContainerBuilder("c").Gpu(1).GpuMem(3).Build(), config);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Req(1, 3072, kMemPercentUnset, 0));
}

TEST(DeriveContainerRequestTest, MemoryFactorBelowOneCountsAsOne) {
  config::NvidiaConfig config;
  config.memory_factor = 0;
  auto r = DeriveContainerRequest(ContainerBuilder("c").Gpu(1).GpuMem(3000).Build(), config);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->mem_mib, 3000);
}

TEST(DeriveContainerRequestTest, MemoryFactorDoesNotScaleDefaultMemory) {
  config::NvidiaConfig config;
  config.memory_factor = 1024;
  config.default_memory = 2048;
  auto r = DeriveContainerRequest(ContainerBuilder("c").Gpu(1).Build(), config);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->mem_mib, 2048);
}

TEST(DeriveContainerRequestTest, AcceptsWholeNumbersWrittenWithSuffixesOrExponents) {
  const model::Container c = ContainerBuilder("c")
                                 .Limit("nvidia.com/gpu", "1e0")
                                 .Limit("nvidia.com/gpumem", "4k")
                                 .Limit("nvidia.com/gpucores", "50000m")
                                 .Build();
  auto r = DeriveContainerRequest(c, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Req(1, 4000, kMemPercentUnset, 50));
}

TEST(DeriveContainerRequestTest, AcceptsTheLargestMemoryThatFitsAfterTheFactor) {
  config::NvidiaConfig config;
  config.memory_factor = 2;
  auto r = DeriveContainerRequest(
      ContainerBuilder("c").Gpu(1).Limit("nvidia.com/gpumem", "1073741823").Build(), config);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->mem_mib, 2147483646);
}

TEST(DeriveContainerRequestTest, UnusableValueIsAnErrorNamingContainerResourceAndValue) {
  struct Case {
    const char* resource;
    const char* value;
    const char* why;
  };
  const std::vector<Case> cases = {
      {"nvidia.com/gpumem", "16Gi",
       "means 17179869184 MiB, more than the maximum 2147483647 (nvidia.com/gpumem counts MiB: "
       "write a "
       "plain number)"},
      {"nvidia.com/gpumem", "16.5", "is not a whole number of MiB"},
      {"nvidia.com/gpumem", "-1", "is negative"},
      {"nvidia.com/gpumem", "lots", "is not a Kubernetes quantity"},
      {"nvidia.com/gpumem", "2147483648", "means 2147483648 MiB, more than the maximum 2147483647"},
      {"nvidia.com/gpu", "0.5", "is not a whole number of devices"},
      {"nvidia.com/gpu", "-1", "is negative"},
      {"nvidia.com/gpu", "500m", "is not a whole number of devices"},
      {"nvidia.com/gpu", "2147483648",
       "means 2147483648 devices, more than the maximum 2147483647"},
      {"nvidia.com/gpumem-percentage", "150", "means 150 percent, more than the maximum 100"},
      {"nvidia.com/gpumem-percentage", "101", "means 101 percent, more than the maximum 100"},
      {"nvidia.com/gpumem-percentage", "-5", "is negative"},
      {"nvidia.com/gpumem-percentage", "12.5", "is not a whole number of percent"},
      {"nvidia.com/gpucores", "101", "means 101 percent, more than the maximum 100"},
      {"nvidia.com/gpucores", "-1", "is negative"},
      {"nvidia.com/gpucores", "0.5", "is not a whole number of percent"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.resource) + "=" + c.value);
    ContainerBuilder b("trainer");
    b.Limit("nvidia.com/gpu", "1").Limit(c.resource, c.value);
    auto r = DeriveContainerRequest(b.Build(), {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, std::string("container trainer: resource ") + c.resource +
                                     ": value \"" + c.value + "\" " + c.why);
  }
}

TEST(DeriveContainerRequestTest, MemoryLimitIsDividedByTheFactor) {
  config::NvidiaConfig config;
  config.memory_factor = 1024;
  auto r = DeriveContainerRequest(
      ContainerBuilder("c").Gpu(1).Limit("nvidia.com/gpumem", "2097152").Build(), config);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "container c: resource nvidia.com/gpumem: value \"2097152\" means 2097152 MiB, more "
            "than the maximum 2097151");
}

TEST(DeriveContainerRequestTest, UnusableRequestedValueIsAnErrorToo) {
  auto r = DeriveContainerRequest(
      ContainerBuilder("c").Gpu(1).Request("nvidia.com/gpumem", "8Gi").Build(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "container c: resource nvidia.com/gpumem: value \"8Gi\" means 8589934592 MiB, more "
            "than the maximum 2147483647 (nvidia.com/gpumem counts MiB: write a plain number)");
}

TEST(DeriveContainerRequestTest, UnusableValueIsIgnoredWhenTheContainerAsksForNoGpu) {
  auto r = DeriveContainerRequest(
      ContainerBuilder("c").Gpu(0).Limit("nvidia.com/gpumem", "16Gi").Build(), {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->Empty());
}

// --- DerivePodRequest ------------------------------------------------------------------------

TEST(DerivePodRequestTest, OrdersSlotsInitContainersFirst) {
  const model::Pod pod =
      PodBuilder("ns/p").Container(1, 1000).InitContainer(1, 2000).Container(0).Build();
  auto req = DerivePodRequest(pod, {});
  ASSERT_TRUE(req.ok()) << req.error().message;
  EXPECT_EQ(req->num_init, 1);
  EXPECT_THAT(req->names, ElementsAre("init0", "c0", "c1"));
  EXPECT_THAT(req->slots, ElementsAre(Req(1, 2000, kMemPercentUnset, 0),
                                      Req(1, 1000, kMemPercentUnset, 0), ContainerRequest{}));
  EXPECT_TRUE(req->IsInit(0));
  EXPECT_FALSE(req->IsInit(1));
  EXPECT_TRUE(req->HasGpu());
}

TEST(DerivePodRequestTest, PodWithoutGpuContainersHasNoGpu) {
  auto req = DerivePodRequest(PodBuilder("ns/p").Container(0).Container(0).Build(), {});
  ASSERT_TRUE(req.ok()) << req.error().message;
  EXPECT_EQ(req->slots.size(), 2u);
  EXPECT_FALSE(req->HasGpu());
}

TEST(DerivePodRequestTest, ErrorNamesThePodAndTheContainer) {
  const model::Pod pod =
      PodBuilder("team/train")
          .Container(1)
          .With(ContainerBuilder("worker").Gpu(1).Limit("nvidia.com/gpucores", "101").Build())
          .Build();
  auto req = DerivePodRequest(pod, {});
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(
      req.error().message,
      "pod team/train: container worker: resource nvidia.com/gpucores: value \"101\" means 101 "
      "percent, more than the maximum 100");
}

}  // namespace
}  // namespace tessera::sched
