#include "core/codec/node_register.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/builders.h"

namespace tessera::codec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr char kWhat[] = "annotation hami.io/node-nvidia-register";

void ExpectSameDevice(const model::GpuDevice& got, const model::GpuDevice& want) {
  EXPECT_EQ(got.uuid, want.uuid);
  EXPECT_EQ(got.index, want.index);
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.total_mem_mib, want.total_mem_mib);
  EXPECT_EQ(got.total_cores, want.total_cores);
  EXPECT_EQ(got.type, want.type);
  EXPECT_EQ(got.numa, want.numa);
  EXPECT_EQ(got.mode, want.mode);
  EXPECT_EQ(got.healthy, want.healthy);
  ASSERT_EQ(got.mig_profiles.size(), want.mig_profiles.size());
  for (size_t i = 0; i < want.mig_profiles.size(); ++i) {
    SCOPED_TRACE(want.mig_profiles[i].name);
    EXPECT_EQ(got.mig_profiles[i].name, want.mig_profiles[i].name);
    EXPECT_EQ(got.mig_profiles[i].memory_mib, want.mig_profiles[i].memory_mib);
    EXPECT_EQ(got.mig_profiles[i].core, want.mig_profiles[i].core);
    EXPECT_EQ(got.mig_profiles[i].slice_count, want.mig_profiles[i].slice_count);
    EXPECT_EQ(got.mig_profiles[i].placements, want.mig_profiles[i].placements);
    EXPECT_EQ(got.mig_profiles[i].max_count, want.mig_profiles[i].max_count);
  }
}

// --- DecodeNodeRegister: the HAMi wire format -------------------------------------------------

TEST(DecodeNodeRegisterTest, ReadsHamiCoreExampleFromTheProtocol) {
  auto devices = DecodeNodeRegister(
      R"([{"id":"GPU-0","count":10,"devmem":32768,"devcore":100,)"
      R"("type":"NVIDIA-Tesla V100-PCIE-32GB","mode":"hami-core","health":true},)"
      R"({"id":"GPU-1","index":1,"count":10,"devmem":32768,"devcore":100,)"
      R"("type":"NVIDIA-Tesla V100-PCIE-32GB","numa":1,"mode":"hami-core","health":true}])");
  ASSERT_TRUE(devices.ok()) << devices.error().message;
  ASSERT_EQ(devices->size(), 2u);
  ExpectSameDevice((*devices)[0], testing::SharingGpu("GPU-0", 32768, 0, 0));
  ExpectSameDevice((*devices)[1], testing::SharingGpu("GPU-1", 32768, 1, 1));
}

TEST(DecodeNodeRegisterTest, ReadsMigExampleAndIgnoresUnknownKeys) {
  auto devices = DecodeNodeRegister(
      R"([{"id":"GPU-0","count":7,"devmem":40960,"devcore":100,"type":"NVIDIA-A100-SXM4-40GB",)"
      R"("numa":0,"health":true,"mode":"mig","migtemplate":[],"custominfo":{"x":1},)"
      R"("migProfiles":[{"name":"1g.5gb","memoryMB":5120,"core":14,"sliceCount":1,)"
      R"("multiprocessorCount":14,"placements":[{"start":6,"size":1}]}]}])");
  ASSERT_TRUE(devices.ok()) << devices.error().message;
  ASSERT_EQ(devices->size(), 1u);
  const model::GpuDevice& d = (*devices)[0];
  EXPECT_EQ(d.mode, "mig");
  EXPECT_TRUE(d.IsMig());
  EXPECT_TRUE(d.healthy);
  ASSERT_EQ(d.mig_profiles.size(), 1u);
  EXPECT_EQ(d.mig_profiles[0].name, "1g.5gb");
  EXPECT_EQ(d.mig_profiles[0].memory_mib, 5120);
  EXPECT_EQ(d.mig_profiles[0].core, 14);
  EXPECT_EQ(d.mig_profiles[0].slice_count, 1u);
  EXPECT_THAT(d.mig_profiles[0].placements, ElementsAre(model::Placement{6, 1}));
  EXPECT_EQ(d.mig_profiles[0].max_count, 0);
}

TEST(DecodeNodeRegisterTest, ReadsTesserasInstanceCountIntoMaxCount) {
  auto devices = DecodeNodeRegister(
      R"([{"id":"GPU-0","mode":"mig","migProfiles":[{"name":"1g.5gb","instanceCount":7,)"
      R"("placements":[{"start":0,"size":1}]}]}])");
  ASSERT_TRUE(devices.ok()) << devices.error().message;
  EXPECT_EQ((*devices)[0].mig_profiles[0].max_count, 7);
}

TEST(DecodeNodeRegisterTest, MatchesKeysCaseInsensitivelyAsGoDoes) {
  auto devices = DecodeNodeRegister(
      R"([{"ID":"GPU-0","Index":3,"COUNT":4,"DevMem":1000,"DEVCORE":50,"Type":"T4","NUMA":1,)"
      R"("Mode":"mig","Health":true,"MIGPROFILES":[{"NAME":"1g.5gb","MemoryMb":5,"CORE":10,)"
      R"("SLICECOUNT":1,"Placements":[{"START":2,"SIZE":1}]}]}])");
  ASSERT_TRUE(devices.ok()) << devices.error().message;
  const model::GpuDevice& d = (*devices)[0];
  EXPECT_EQ(d.uuid, "GPU-0");
  EXPECT_EQ(d.index, 3u);
  EXPECT_EQ(d.count, 4);
  EXPECT_EQ(d.total_mem_mib, 1000);
  EXPECT_EQ(d.total_cores, 50);
  EXPECT_EQ(d.type, "T4");
  EXPECT_EQ(d.numa, 1);
  EXPECT_EQ(d.mode, "mig");
  EXPECT_TRUE(d.healthy);
  ASSERT_EQ(d.mig_profiles.size(), 1u);
  EXPECT_EQ(d.mig_profiles[0].name, "1g.5gb");
  EXPECT_EQ(d.mig_profiles[0].memory_mib, 5);
  EXPECT_EQ(d.mig_profiles[0].core, 10);
  EXPECT_EQ(d.mig_profiles[0].slice_count, 1u);
  EXPECT_THAT(d.mig_profiles[0].placements, ElementsAre(model::Placement{2, 1}));
}

TEST(DecodeNodeRegisterTest, AbsentHealthMeansUnhealthy) {
  auto devices = DecodeNodeRegister(R"([{"id":"GPU-0","count":10}])");
  ASSERT_TRUE(devices.ok()) << devices.error().message;
  EXPECT_FALSE((*devices)[0].healthy);
}

TEST(DecodeNodeRegisterTest, NullHealthMeansUnhealthy) {
  auto devices = DecodeNodeRegister(R"([{"id":"GPU-0","health":null}])");
  ASSERT_TRUE(devices.ok()) << devices.error().message;
  EXPECT_FALSE((*devices)[0].healthy);
}

TEST(DecodeNodeRegisterTest, AbsentOrEmptyModeMeansHamiCore) {
  auto devices = DecodeNodeRegister(R"([{"id":"GPU-0"},{"id":"GPU-1","mode":""}])");
  ASSERT_TRUE(devices.ok()) << devices.error().message;
  EXPECT_EQ((*devices)[0].mode, "hami-core");
  EXPECT_EQ((*devices)[1].mode, "hami-core");
}

TEST(DecodeNodeRegisterTest, AbsentNumbersAreZero) {
  auto devices = DecodeNodeRegister(R"([{"id":"GPU-0"}])");
  ASSERT_TRUE(devices.ok()) << devices.error().message;
  const model::GpuDevice& d = (*devices)[0];
  EXPECT_EQ(d.index, 0u);
  EXPECT_EQ(d.count, 0);
  EXPECT_EQ(d.total_mem_mib, 0);
  EXPECT_EQ(d.total_cores, 0);
  EXPECT_EQ(d.numa, 0);
  EXPECT_TRUE(d.mig_profiles.empty());
}

TEST(DecodeNodeRegisterTest, KeepsAnUnknownModeStringAsWritten) {
  auto devices = DecodeNodeRegister(R"([{"id":"GPU-0","mode":"mps"},{"id":"GPU-1","mode":"x"}])");
  ASSERT_TRUE(devices.ok()) << devices.error().message;
  EXPECT_EQ((*devices)[0].mode, "mps");
  EXPECT_EQ((*devices)[1].mode, "x");
}

TEST(DecodeNodeRegisterTest, AcceptsWholeNumbersWrittenAsFloats) {
  auto devices = DecodeNodeRegister(R"([{"id":"GPU-0","devmem":32768.0}])");
  ASSERT_TRUE(devices.ok()) << devices.error().message;
  EXPECT_EQ((*devices)[0].total_mem_mib, 32768);
}

// --- DecodeNodeRegister: errors --------------------------------------------------------------

TEST(DecodeNodeRegisterTest, InvalidJsonIsAnError) {
  auto devices = DecodeNodeRegister("[{\"id\":");
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.error().message, std::string(kWhat) + ": invalid JSON: \"[{\"id\":\"");
}

TEST(DecodeNodeRegisterTest, LegacyColonFormatIsRejectedAsInvalidJson) {
  auto devices = DecodeNodeRegister(
      "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true,0,"
      "hami-core:");
  ASSERT_FALSE(devices.ok());
  EXPECT_THAT(devices.error().message, HasSubstr(std::string(kWhat) + ": invalid JSON"));
}

TEST(DecodeNodeRegisterTest, ValueThatIsNotAnArrayIsAnError) {
  for (const char* text : {R"({"id":"GPU-0"})", "\"GPU-0\"", "1", "null"}) {
    SCOPED_TRACE(text);
    auto devices = DecodeNodeRegister(text);
    ASSERT_FALSE(devices.ok());
    EXPECT_EQ(devices.error().message, std::string(kWhat) + ": expected a JSON array of devices");
  }
}

TEST(DecodeNodeRegisterTest, EmptyArrayIsNoGpuFoundOnNode) {
  auto devices = DecodeNodeRegister("[]");
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.error().message, std::string(kWhat) + ": no gpu found on node");
}

TEST(DecodeNodeRegisterTest, DuplicateUuidIsAnErrorNamingTheSecondDevice) {
  auto devices = DecodeNodeRegister(R"([{"id":"GPU-0"},{"id":"GPU-1"},{"id":"GPU-0"}])");
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.error().message, std::string(kWhat) + "[2].id: duplicate GPU UUID \"GPU-0\"");
}

TEST(DecodeNodeRegisterTest, InvalidDeviceIsAnErrorNamingTheField) {
  struct Case {
    const char* name;
    const char* json;
    const char* want;  // after "annotation hami.io/node-nvidia-register"
  };
  const std::vector<Case> cases = {
      {"element not an object", R"(["GPU-0"])", "[0]: expected an object, got \"GPU-0\""},
      {"missing id", R"([{"count":1}])", "[0].id: missing GPU UUID"},
      {"empty id", R"([{"id":""}])", "[0].id: missing GPU UUID"},
      {"id not a string", R"([{"id":7}])", "[0].id: expected a string, got 7"},
      {"index negative", R"([{"id":"G","index":-1}])",
       "[0].index: -1 is out of range [0, 4294967295]"},
      {"count a string", R"([{"id":"G","count":"10"}])",
       "[0].count: expected a number, got \"10\""},
      {"count above int32", R"([{"id":"G","count":2147483648}])",
       "[0].count: 2147483648 is out of range [0, 2147483647]"},
      {"devmem fractional", R"([{"id":"G","devmem":1.5}])",
       "[0].devmem: expected a whole number, got 1.5"},
      {"devmem negative", R"([{"id":"G","devmem":-1}])",
       "[0].devmem: -1 is out of range [0, 2147483647]"},
      {"devcore a bool", R"([{"id":"G","devcore":true}])",
       "[0].devcore: expected a number, got true"},
      {"type a number", R"([{"id":"G","type":1}])", "[0].type: expected a string, got 1"},
      {"numa below -1", R"([{"id":"G","numa":-2}])",
       "[0].numa: -2 is out of range [-1, 2147483647]"},
      {"mode a number", R"([{"id":"G","mode":1}])", "[0].mode: expected a string, got 1"},
      {"health a string", R"([{"id":"G","health":"true"}])",
       "[0].health: expected true or false, got \"true\""},
      {"migProfiles an object", R"([{"id":"G","migProfiles":{}}])",
       "[0].migProfiles: expected an array"},
      {"error in the second device", R"([{"id":"G"},{"id":"H","count":-1}])",
       "[1].count: -1 is out of range [0, 2147483647]"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto devices = DecodeNodeRegister(c.json);
    ASSERT_FALSE(devices.ok());
    EXPECT_EQ(devices.error().message, std::string(kWhat) + c.want);
  }
}

TEST(DecodeNodeRegisterTest, InvalidMigProfileIsAnErrorNamingTheField) {
  struct Case {
    const char* name;
    const char* profiles;
    const char* want;  // after "annotation hami.io/node-nvidia-register[0].migProfiles"
  };
  const std::vector<Case> cases = {
      {"profile not an object", R"(["1g.5gb"])", "[0]: expected an object, got \"1g.5gb\""},
      {"missing name", R"([{"memoryMB":5}])", "[0].name: missing"},
      {"name a number", R"([{"name":1}])", "[0].name: expected a string, got 1"},
      {"memoryMB negative", R"([{"name":"a","memoryMB":-5}])",
       "[0].memoryMB: -5 is out of range [0, 2147483647]"},
      {"core above 100", R"([{"name":"a","core":101}])", "[0].core: 101 is out of range [0, 100]"},
      {"sliceCount a string", R"([{"name":"a","sliceCount":"1"}])",
       "[0].sliceCount: expected a number, got \"1\""},
      {"instanceCount negative", R"([{"name":"a","instanceCount":-1}])",
       "[0].instanceCount: -1 is out of range [0, 2147483647]"},
      {"duplicate profile", R"([{"name":"1g.5gb"},{"name":"1g.5gb"}])",
       "[1]: duplicate profile \"1g.5gb\""},
      {"placements an object", R"([{"name":"a","placements":{}}])",
       "[0].placements: expected an array"},
      {"placement not an object", R"([{"name":"a","placements":[1]}])",
       "[0].placements[0]: expected an object"},
      {"placement without size", R"([{"name":"a","placements":[{"start":0}]}])",
       "[0].placements[0].size: missing or zero"},
      {"placement of size zero", R"([{"name":"a","placements":[{"start":0,"size":0}]}])",
       "[0].placements[0].size: 0 is out of range [1, 32]"},
      {"placement start beyond 31", R"([{"name":"a","placements":[{"start":32,"size":1}]}])",
       "[0].placements[0].start: 32 is out of range [0, 31]"},
      {"placement start negative", R"([{"name":"a","placements":[{"start":-1,"size":1}]}])",
       "[0].placements[0].start: -1 is out of range [0, 31]"},
      {"placement size above 32", R"([{"name":"a","placements":[{"start":0,"size":33}]}])",
       "[0].placements[0].size: 33 is out of range [1, 32]"},
      {"placement ends beyond 32",
       R"([{"name":"a","placements":[{"start":0,"size":1},{"start":24,"size":9}]}])",
       "[0].placements[1]: placement ends beyond slice 32"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto devices = DecodeNodeRegister(std::string(R"([{"id":"G","mode":"mig","migProfiles":)") +
                                      c.profiles + "}]");
    ASSERT_FALSE(devices.ok());
    EXPECT_EQ(devices.error().message, std::string(kWhat) + "[0].migProfiles" + c.want);
  }
}

// --- EncodeNodeRegister ----------------------------------------------------------------------

TEST(EncodeNodeRegisterTest, WritesGoFieldOrderAndOmitsZeroValues) {
  model::GpuDevice d = testing::SharingGpu("GPU-0");
  EXPECT_EQ(EncodeNodeRegister({d}),
            R"([{"id":"GPU-0","count":10,"devmem":32768,"devcore":100,)"
            R"("type":"NVIDIA-Tesla V100-PCIE-32GB","mode":"hami-core","health":true}])");
}

TEST(EncodeNodeRegisterTest, WritesIndexAndNumaWhenNonZero) {
  model::GpuDevice d = testing::SharingGpu("GPU-1", 32768, 1, 1);
  EXPECT_EQ(EncodeNodeRegister({d}),
            R"([{"id":"GPU-1","index":1,"count":10,"devmem":32768,"devcore":100,)"
            R"("type":"NVIDIA-Tesla V100-PCIE-32GB","numa":1,"mode":"hami-core","health":true}])");
}

TEST(EncodeNodeRegisterTest, OmitsHealthWhenUnhealthy) {
  model::GpuDevice d;
  d.uuid = "GPU-0";
  d.healthy = false;
  EXPECT_EQ(EncodeNodeRegister({d}), R"([{"id":"GPU-0","mode":"hami-core"}])");
}

TEST(EncodeNodeRegisterTest, WritesMigProfilesWithPlacementsAndInstanceCountWhenKnown) {
  model::GpuDevice d;
  d.uuid = "GPU-a";
  d.mode = "mig";
  d.mig_profiles = {testing::Profile("1g.5gb", 4864, 15, 1, {{0, 1}, {1, 1}}, 7),
                    testing::Profile("7g.40gb", 40192, 100, 7, {{0, 8}})};
  EXPECT_EQ(EncodeNodeRegister({d}),
            R"([{"id":"GPU-a","mode":"mig","migProfiles":[)"
            R"({"name":"1g.5gb","memoryMB":4864,"core":15,"sliceCount":1,)"
            R"("placements":[{"start":0,"size":1},{"start":1,"size":1}],"instanceCount":7},)"
            R"({"name":"7g.40gb","memoryMB":40192,"core":100,"sliceCount":7,)"
            R"("placements":[{"start":0,"size":8}]}]}])");
}

TEST(EncodeNodeRegisterTest, EmptyDeviceListIsAnEmptyArray) {
  EXPECT_EQ(EncodeNodeRegister({}), "[]");
}

TEST(NodeRegisterRoundTripTest, DecodeOfEncodeGivesTheSameDevices) {
  std::vector<model::GpuDevice> devices = {
      testing::SharingGpu("GPU-0"), testing::SharingGpu("GPU-1", 16384, 1, 1),
      testing::A100Mig("GPU-2", 2), testing::RtxPro6000Mig("GPU-3")};
  devices[1].healthy = false;
  auto decoded = DecodeNodeRegister(EncodeNodeRegister(devices));
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  ASSERT_EQ(decoded->size(), devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    SCOPED_TRACE(devices[i].uuid);
    ExpectSameDevice((*decoded)[i], devices[i]);
  }
}

// --- Pair scores ------------------------------------------------------------------------------

TEST(DecodePairScoresTest, ReadsTheProtocolExample) {
  auto scores = DecodePairScores(
      R"([{"uuid":"GPU-0","score":{"GPU-1":100}},{"uuid":"GPU-1","score":{"GPU-0":100}}])");
  ASSERT_TRUE(scores.ok()) << scores.error().message;
  EXPECT_THAT(*scores, UnorderedElementsAre(Pair("GPU-0", ElementsAre(Pair("GPU-1", 100))),
                                            Pair("GPU-1", ElementsAre(Pair("GPU-0", 100)))));
}

TEST(DecodePairScoresTest, MatchesKeysCaseInsensitivelyAndKeepsScoreKeysAsWritten) {
  auto scores = DecodePairScores(R"([{"UUID":"GPU-0","Score":{"gpu-1":5},"extra":1}])");
  ASSERT_TRUE(scores.ok()) << scores.error().message;
  EXPECT_THAT(*scores, ElementsAre(Pair("GPU-0", ElementsAre(Pair("gpu-1", 5)))));
}

TEST(DecodePairScoresTest, AbsentOrNullScoreGivesAnEmptyRow) {
  auto scores = DecodePairScores(R"([{"uuid":"GPU-0"},{"uuid":"GPU-1","score":null}])");
  ASSERT_TRUE(scores.ok()) << scores.error().message;
  EXPECT_THAT(*scores, ElementsAre(Pair("GPU-0", ::testing::IsEmpty()),
                                   Pair("GPU-1", ::testing::IsEmpty())));
}

TEST(DecodePairScoresTest, EmptyArrayGivesNoScores) {
  auto scores = DecodePairScores("[]");
  ASSERT_TRUE(scores.ok()) << scores.error().message;
  EXPECT_TRUE(scores->empty());
}

TEST(DecodePairScoresTest, InvalidInputIsAnErrorNamingTheField) {
  const std::string what = "annotation hami.io/node-nvidia-score";
  struct Case {
    const char* name;
    const char* json;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"invalid JSON", "[", what + ": invalid JSON: \"[\""},
      {"not an array", R"({"uuid":"GPU-0"})", what + ": expected a JSON array"},
      {"missing uuid", R"([{"score":{}}])", what + "[0].uuid: missing"},
      {"uuid a number", R"([{"uuid":1}])", what + "[0].uuid: expected a string, got 1"},
      {"score an array", R"([{"uuid":"GPU-0","score":[]}])",
       what + "[0].score: expected an object"},
      {"score value a string", R"([{"uuid":"GPU-0","score":{"GPU-1":"100"}}])",
       what + "[0].score.GPU-1: expected a number, got \"100\""},
      {"score value beyond int32", R"([{"uuid":"GPU-0","score":{"GPU-1":2147483648}}])",
       what + "[0].score.GPU-1: 2147483648 is out of range [-2147483647, 2147483647]"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto scores = DecodePairScores(c.json);
    ASSERT_FALSE(scores.ok());
    EXPECT_EQ(scores.error().message, c.want);
  }
}

TEST(EncodePairScoresTest, WritesRowsInUuidOrder) {
  model::PairScores scores;
  scores["GPU-1"]["GPU-0"] = 100;
  scores["GPU-0"]["GPU-1"] = 100;
  scores["GPU-0"]["GPU-2"] = 40;
  EXPECT_EQ(EncodePairScores(scores), R"([{"uuid":"GPU-0","score":{"GPU-1":100,"GPU-2":40}},)"
                                      R"({"uuid":"GPU-1","score":{"GPU-0":100}}])");
}

TEST(PairScoresRoundTripTest, DecodeOfEncodeGivesTheSameScores) {
  model::PairScores scores;
  scores["GPU-0"]["GPU-1"] = 100;
  scores["GPU-0"]["GPU-2"] = -3;
  scores["GPU-1"] = {};
  auto decoded = DecodePairScores(EncodePairScores(scores));
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(*decoded, scores);
}

}  // namespace
}  // namespace tessera::codec
