#include "core/node/profile_names.h"

#include <gtest/gtest.h>

namespace tessera::node {
namespace {

TEST(ProfileNamesTest, GoNvlibNamesFromEnumAndMemory) {
  // RTX PRO 6000: 24192 of 97887 MiB -> 2/8 of 96 GB.
  EXPECT_EQ(MigProfileName(0, 24192, 97887), "1g.24gb");
  EXPECT_EQ(MigProfileName(15, 24192, 97887), "1g.24gb+me.all");
  EXPECT_EQ(MigProfileName(13, 24192, 97887), "1g.24gb-me");
  // A100-40GB: 1g.5gb, its REV2 twin 1g.10gb, 3g.20gb (4 memory slices), 7g.40gb.
  EXPECT_EQ(MigProfileName(0, 4864, 40960), "1g.5gb");
  EXPECT_EQ(MigProfileName(9, 9856, 40960), "1g.10gb");
  EXPECT_EQ(MigProfileName(7, 4864, 40960), "1g.5gb+me");
  EXPECT_EQ(MigProfileName(2, 19968, 40960), "3g.20gb");
  EXPECT_EQ(MigProfileName(4, 39424, 40960), "7g.40gb");
  EXPECT_EQ(MigProfileName(0x12, 1, 1), "");
}

TEST(ProfileNamesTest, ComputeProfilesCoverTheWholeGpuInstance) {
  EXPECT_EQ(GpuInstanceSlices(4), 7U);
  EXPECT_EQ(GpuInstanceSlices(15), 1U);
  EXPECT_EQ(ComputeProfileForSlices(1), 0);
  EXPECT_EQ(ComputeProfileForSlices(7), 4);
  EXPECT_EQ(ComputeProfileForSlices(6), 6);
  EXPECT_EQ(ComputeProfileForSlices(5), -1);
}

}  // namespace
}  // namespace tessera::node
