#include "core/codec/pod_devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::codec {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kUuid[] = "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448";

ContainerDevice Dev(const std::string& uuid, int32_t mem, int32_t cores) {
  return ContainerDevice{uuid, "NVIDIA", mem, cores};
}

TEST(DecodePodDevicesTest, ReadsTwoContainersFromTheProtocolExample) {
  auto pod = DecodePodDevices(std::string(kUuid) + ",NVIDIA,3000,0:;" + kUuid + ",NVIDIA,5000,0:;");
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_THAT(*pod,
              ElementsAre(ElementsAre(Dev(kUuid, 3000, 0)), ElementsAre(Dev(kUuid, 5000, 0))));
}

TEST(DecodePodDevicesTest, KeepsALeadingEmptySlot) {
  auto pod = DecodePodDevices(";GPU-A,NVIDIA,1000,30:;");
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_THAT(*pod, ElementsAre(IsEmpty(), ElementsAre(Dev("GPU-A", 1000, 30))));
}

TEST(DecodePodDevicesTest, ReadsTwoMigSlicesOfOneGpuInOneContainer) {
  auto pod = DecodePodDevices("GPU-a,NVIDIA,5120,14:GPU-a,NVIDIA,5120,14:;");
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_THAT(*pod, ElementsAre(ElementsAre(Dev("GPU-a", 5120, 14), Dev("GPU-a", 5120, 14))));
}

TEST(DecodePodDevicesTest, EmptyTextHasNoSlots) {
  auto pod = DecodePodDevices("");
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_THAT(*pod, IsEmpty());
}

TEST(DecodePodDevicesTest, EachSemicolonTerminatesOneSlot) {
  auto pod = DecodePodDevices(";;;");
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_THAT(*pod, ElementsAre(IsEmpty(), IsEmpty(), IsEmpty()));
}

TEST(DecodePodDevicesTest, LastSlotWithoutTerminatorIsStillASlot) {
  auto pod = DecodePodDevices("GPU-A,NVIDIA,1,2:");
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_THAT(*pod, ElementsAre(ElementsAre(Dev("GPU-A", 1, 2))));
}

TEST(DecodePodDevicesTest, IgnoresPiecesWithoutCommaAsHamiDoes) {
  auto pod = DecodePodDevices("junk:GPU-A,NVIDIA,1,2::;");
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_THAT(*pod, ElementsAre(ElementsAre(Dev("GPU-A", 1, 2))));
}

TEST(DecodePodDevicesTest, KeepsTheTypeWordAsWrittenAndIgnoresExtraFields) {
  auto pod = DecodePodDevices("GPU-A,OTHER,1,2,extra:;");
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_THAT(*pod, ElementsAre(ElementsAre(ContainerDevice{"GPU-A", "OTHER", 1, 2})));
}

TEST(DecodePodDevicesTest, MalformedDeviceIsAnErrorNamingSlotAndDevice) {
  struct Case {
    const char* name;
    const char* text;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"three fields", "GPU-A,NVIDIA,1000:;",
       "container slot 0 device \"GPU-A,NVIDIA,1000\": missing fields, expected "
       "uuid,type,usedmem,usedcores"},
      {"two fields in the second slot", ";GPU-A,NVIDIA:;",
       "container slot 1 device \"GPU-A,NVIDIA\": missing fields, expected "
       "uuid,type,usedmem,usedcores"},
      {"empty uuid", ",NVIDIA,1,2:;", "container slot 0 device \",NVIDIA,1,2\": empty GPU UUID"},
      {"usedmem not a number", "GPU-A,NVIDIA,1G,2:;",
       "container slot 0 device \"GPU-A,NVIDIA,1G,2\": usedmem \"1G\" is not a non-negative int32"},
      {"usedmem empty", "GPU-A,NVIDIA,,2:;",
       "container slot 0 device \"GPU-A,NVIDIA,,2\": usedmem \"\" is not a non-negative int32"},
      {"usedmem negative", "GPU-A,NVIDIA,-1,2:;",
       "container slot 0 device \"GPU-A,NVIDIA,-1,2\": usedmem \"-1\" is not a non-negative int32"},
      {"usedmem beyond int32", "GPU-A,NVIDIA,2147483648,2:;",
       "container slot 0 device \"GPU-A,NVIDIA,2147483648,2\": usedmem \"2147483648\" is not a "
       "non-negative int32"},
      {"usedcores fractional", "GPU-A,NVIDIA,1,0.5:;",
       "container slot 0 device \"GPU-A,NVIDIA,1,0.5\": usedcores \"0.5\" is not a non-negative "
       "int32"},
      {"usedcores negative", "GPU-A,NVIDIA,1,-30:;",
       "container slot 0 device \"GPU-A,NVIDIA,1,-30\": usedcores \"-30\" is not a non-negative "
       "int32"},
      {"usedcores beyond int32", "GPU-A,NVIDIA,1,2147483648:;",
       "container slot 0 device \"GPU-A,NVIDIA,1,2147483648\": usedcores \"2147483648\" is not a "
       "non-negative int32"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto pod = DecodePodDevices(c.text);
    ASSERT_FALSE(pod.ok());
    EXPECT_EQ(pod.error().message, c.want);
  }
}

TEST(DecodePodDevicesTest, AcceptsInt32Maximum) {
  auto pod = DecodePodDevices("GPU-A,NVIDIA,2147483647,2147483647:;");
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_THAT(*pod, ElementsAre(ElementsAre(Dev("GPU-A", 2147483647, 2147483647))));
}

TEST(EncodePodDevicesTest, WritesTheProtocolExamples) {
  EXPECT_EQ(EncodePodDevices({{Dev(kUuid, 3000, 0)}, {Dev(kUuid, 5000, 0)}}),
            std::string(kUuid) + ",NVIDIA,3000,0:;" + kUuid + ",NVIDIA,5000,0:;");
  EXPECT_EQ(EncodePodDevices({{}, {Dev("GPU-A", 1000, 30)}}), ";GPU-A,NVIDIA,1000,30:;");
  EXPECT_EQ(EncodePodDevices({{Dev("GPU-a", 5120, 14), Dev("GPU-a", 5120, 14)}}),
            "GPU-a,NVIDIA,5120,14:GPU-a,NVIDIA,5120,14:;");
}

TEST(EncodePodDevicesTest, KeepsTrailingEmptySlots) {
  EXPECT_EQ(EncodePodDevices({{Dev("GPU-A", 1, 2)}, {}, {}}), "GPU-A,NVIDIA,1,2:;;;");
}

TEST(EncodePodDevicesTest, NoSlotsIsEmptyText) { EXPECT_EQ(EncodePodDevices({}), ""); }

TEST(PodDevicesRoundTripTest, DecodeOfEncodeKeepsEverySlot) {
  const std::vector<PodDevices> cases = {
      {},
      {{}},
      {{}, {}, {Dev("GPU-A", 1000, 30)}},
      {{Dev("GPU-A", 1000, 30), Dev("GPU-B", 0, 0)}, {}, {Dev("GPU-A", 5, 100)}, {}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    std::string text = EncodePodDevices(cases[i]);
    auto decoded = DecodePodDevices(text);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(*decoded, cases[i]) << text;
  }
}

}  // namespace
}  // namespace tessera::codec
