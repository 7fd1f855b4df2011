#include "core/state/quota_book.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace tessera::state {
namespace {

codec::ContainerDevice Dev(const std::string& uuid, int32_t mem, int32_t cores) {
  return codec::ContainerDevice{uuid, "NVIDIA", mem, cores};
}

model::ResourceQuota Quota(const std::string& ns, const std::string& name,
                           std::map<std::string, std::string> hard) {
  return model::ResourceQuota{ns, name, std::move(hard)};
}

TEST(QuotaUseOfTest, InitContainersCountAtTheirPeakAndAppContainersAddUpPerGpu) {
  // Two init containers (3000 and 5000 MiB on GPU-A), then two app containers on GPU-A (2000 +
  // 2000) and one on GPU-B (1000).
  codec::PodDevices devices = {{Dev("GPU-A", 3000, 10)},
                               {Dev("GPU-A", 5000, 30)},
                               {Dev("GPU-A", 2000, 20)},
                               {Dev("GPU-A", 2000, 20), Dev("GPU-B", 1000, 5)}};
  const QuotaUse use = QuotaUseOf(devices, 2);
  EXPECT_EQ(use.mem, 5000 + 1000);                      // GPU-A: max(5000, 4000); GPU-B: 1000
  EXPECT_EQ(use.cores, 40 + 5);                         // GPU-A: max(30, 40)
  EXPECT_EQ(QuotaUseOf(devices, 0).mem, 12000 + 1000);  // no init containers: all add up
}

TEST(QuotaBookTest, NoQuotaMeansNoLimit) {
  QuotaBook book{config::NvidiaConfig{}};
  book.AddUse("team", {100000, 1000});
  EXPECT_FALSE(book.HeadroomFor("team").has_value());
  book.Upsert(Quota("team", "pods-only", {{"pods", "10"}, {"requests.cpu", "4"}}));
  EXPECT_FALSE(book.HeadroomFor("team").has_value()) << "quotas without GPU limits limit nothing";
}

TEST(QuotaBookTest, HeadroomIsTheTightestLimitMinusTheUse) {
  QuotaBook book{config::NvidiaConfig{}};
  book.Upsert(Quota("team", "a", {{"limits.nvidia.com/gpumem", "20000"}}));
  book.Upsert(Quota("team", "b",
                    {{"limits.nvidia.com/gpumem", "9000"}, {"limits.nvidia.com/gpucores", "150"}}));
  book.AddUse("team", {4000, 50});
  auto h = book.HeadroomFor("team");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->mem, 5000);
  EXPECT_EQ(h->cores, 100);
  EXPECT_TRUE(h->Admits({5000, 100}));
  EXPECT_FALSE(h->Admits({5001, 0}));
  EXPECT_FALSE(h->Admits({0, 101}));
  book.Remove("team", "b");
  EXPECT_EQ(book.HeadroomFor("team")->mem, 16000);
  EXPECT_FALSE(book.HeadroomFor("team")->cores.has_value());
  book.RemoveUse("team", {4000, 50});
  EXPECT_EQ(book.HeadroomFor("team")->mem, 20000);
  EXPECT_FALSE(book.HeadroomFor("other").has_value());
}

TEST(QuotaBookTest, MemoryLimitsScaleByTheMemoryFactor) {
  config::NvidiaConfig config;
  config.memory_factor = 1024;  // gpumem counted in GiB, usage in MiB
  QuotaBook book{config};
  book.Upsert(Quota("team", "gpu", {{"limits.nvidia.com/gpumem", "16"}}));
  EXPECT_EQ(book.HeadroomFor("team")->mem, 16 * 1024);
  book.Upsert(Quota("big", "gpu", {{"limits.nvidia.com/gpumem", "9223372036854775807"}}));
  EXPECT_EQ(book.HeadroomFor("big")->mem, INT64_MAX) << "saturates, never overflows";
  // The conversion readers (explain's limit lines) use, the same as the headroom's.
  EXPECT_EQ(book.MemoryLimitMib(16), 16 * 1024);
  EXPECT_EQ(book.MemoryLimitMib(INT64_MAX / 1000), INT64_MAX);
}

TEST(QuotaBookTest, UnusableLimitsAreNamedAndTheOthersApply) {
  QuotaBook book{config::NvidiaConfig{}};
  auto problems = book.Upsert(Quota(
      "team", "gpu", {{"limits.nvidia.com/gpumem", "1.5"}, {"limits.nvidia.com/gpucores", "50"}}));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("ResourceQuota team/gpu: spec.hard.limits.nvidia.com/gpumem"),
            std::string::npos)
      << problems[0];
  auto h = book.HeadroomFor("team");
  ASSERT_TRUE(h.has_value());
  EXPECT_FALSE(h->mem.has_value());
  EXPECT_EQ(h->cores, 50);
  EXPECT_EQ(book.Upsert(Quota("team", "neg", {{"limits.nvidia.com/gpucores", "-1"}})).size(), 1u);
}

TEST(QuotaBookTest, UseBelowZeroIsClamped) {
  QuotaBook book{config::NvidiaConfig{}};
  book.Upsert(Quota("team", "gpu", {{"limits.nvidia.com/gpumem", "1000"}}));
  book.RemoveUse("team", {500, 5});
  EXPECT_EQ(book.HeadroomFor("team")->mem, 1000);
}

}  // namespace
}  // namespace tessera::state
