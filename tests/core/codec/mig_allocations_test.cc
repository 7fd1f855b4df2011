#include "core/codec/mig_allocations.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::codec {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kIncomplete[] =
    " is incomplete: needs containerIndex, deviceIndex, gpuUUID, profile and a placement of "
    "non-zero size";
constexpr char kPartial[] =
    " has a partial runtime identity: migUUID, gpuInstanceID and computeInstanceID must be all "
    "present or all absent";

MigAllocation Alloc(int container, int device, const std::string& uuid, const std::string& profile,
                    model::Placement placement) {
  MigAllocation a;
  a.container_index = container;
  a.device_index = device;
  a.gpu_uuid = uuid;
  a.profile = profile;
  a.placement = placement;
  return a;
}

MigAllocation WithRuntime(MigAllocation a, const std::string& mig_uuid, uint32_t gi, uint32_t ci) {
  a.runtime = MigRuntimeIdentity{mig_uuid, gi, ci};
  return a;
}

// --- Encode ----------------------------------------------------------------------------------

TEST(EncodeMigAllocationsTest, WritesTheProtocolExample) {
  EXPECT_EQ(EncodeMigAllocations(
                {Alloc(0, 0, "GPU-a", "1g.5gb", {6, 1}), Alloc(0, 1, "GPU-a", "1g.5gb", {5, 1})}),
            R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb",)"
            R"("placement":{"start":6,"size":1}},)"
            R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"GPU-a","profile":"1g.5gb",)"
            R"("placement":{"start":5,"size":1}}])");
}

TEST(EncodeMigAllocationsTest, WritesRuntimeIdentityIncludingZeroIds) {
  EXPECT_EQ(EncodeMigAllocations(
                {WithRuntime(Alloc(1, 0, "GPU-a", "2g.10gb", {0, 2}), "MIG-1234", 0, 0)}),
            R"([{"containerIndex":1,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"2g.10gb",)"
            R"("placement":{"start":0,"size":2},"migUUID":"MIG-1234","gpuInstanceID":0,)"
            R"("computeInstanceID":0}])");
}

TEST(EncodeMigAllocationsTest, OmitsEntriesWithoutProfileOrWithZeroSize) {
  EXPECT_EQ(EncodeMigAllocations({Alloc(0, 0, "GPU-a", "", {0, 1}),
                                  Alloc(0, 1, "GPU-a", "1g.5gb", {0, 0}),
                                  Alloc(1, 0, "GPU-b", "1g.5gb", {3, 1})}),
            R"([{"containerIndex":1,"deviceIndex":0,"gpuUUID":"GPU-b","profile":"1g.5gb",)"
            R"("placement":{"start":3,"size":1}}])");
}

TEST(EncodeMigAllocationsTest, NothingToWriteIsEmptyText) {
  EXPECT_EQ(EncodeMigAllocations({}), "");
  EXPECT_EQ(EncodeMigAllocations(
                {Alloc(0, 0, "GPU-a", "", {0, 1}), Alloc(0, 1, "GPU-a", "1g.5gb", {0, 0})}),
            "");
}

// --- Decode ----------------------------------------------------------------------------------

TEST(DecodeMigAllocationsTest, EmptyTextIsNoAllocations) {
  auto allocations = DecodeMigAllocations("");
  ASSERT_TRUE(allocations.ok()) << allocations.error().message;
  EXPECT_THAT(*allocations, IsEmpty());
}

TEST(DecodeMigAllocationsTest, JsonNullAndEmptyArrayAreNoAllocations) {
  for (const char* text : {"null", "[]"}) {
    SCOPED_TRACE(text);
    auto allocations = DecodeMigAllocations(text);
    ASSERT_TRUE(allocations.ok()) << allocations.error().message;
    EXPECT_THAT(*allocations, IsEmpty());
  }
}

TEST(DecodeMigAllocationsTest, ReadsTheProtocolExampleWithoutRuntimeIdentity) {
  auto allocations = DecodeMigAllocations(
      R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"2g.10gb",)"
      R"("placement":{"start":0,"size":2}}])");
  ASSERT_TRUE(allocations.ok()) << allocations.error().message;
  ASSERT_EQ(allocations->size(), 1u);
  EXPECT_EQ((*allocations)[0], Alloc(0, 0, "GPU-a", "2g.10gb", {0, 2}));
  EXPECT_FALSE((*allocations)[0].runtime.has_value());
}

TEST(DecodeMigAllocationsTest, ReadsRuntimeIdentityWithZeroIds) {
  auto allocations = DecodeMigAllocations(
      R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb",)"
      R"("placement":{"start":6,"size":1},"migUUID":"MIG-x","gpuInstanceID":0,)"
      R"("computeInstanceID":0}])");
  ASSERT_TRUE(allocations.ok()) << allocations.error().message;
  ASSERT_EQ(allocations->size(), 1u);
  EXPECT_EQ((*allocations)[0], WithRuntime(Alloc(0, 0, "GPU-a", "1g.5gb", {6, 1}), "MIG-x", 0, 0));
}

TEST(DecodeMigAllocationsTest, MatchesKeysCaseInsensitivelyAndIgnoresUnknownKeys) {
  auto allocations = DecodeMigAllocations(
      R"([{"ContainerIndex":2,"DEVICEINDEX":1,"gpuuuid":"GPU-a","Profile":"3g.20gb",)"
      R"("Placement":{"Start":4,"SIZE":4},"note":"x"}])");
  ASSERT_TRUE(allocations.ok()) << allocations.error().message;
  ASSERT_EQ(allocations->size(), 1u);
  EXPECT_EQ((*allocations)[0], Alloc(2, 1, "GPU-a", "3g.20gb", {4, 4}));
}

TEST(MigAllocationsRoundTripTest, DecodeOfEncodeGivesTheSameAllocations) {
  const std::vector<MigAllocation> allocations = {
      Alloc(0, 0, "GPU-a", "1g.5gb", {6, 1}),
      WithRuntime(Alloc(0, 1, "GPU-a", "1g.5gb", {5, 1}), "MIG-aaaa", 7, 0),
      WithRuntime(Alloc(3, 0, "GPU-b", "7g.40gb", {0, 8}), "MIG-bbbb", 0, 2),
  };
  auto decoded = DecodeMigAllocations(EncodeMigAllocations(allocations));
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(*decoded, allocations);
}

TEST(DecodeMigAllocationsTest, MalformedDocumentIsAnError) {
  const std::string what = "annotation hami.io/vgpu-mig-allocations";
  struct Case {
    const char* name;
    const char* text;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"invalid JSON", "[{", what + ": invalid JSON: \"[{\""},
      {"not an array", R"({"containerIndex":0})", what + ": expected a JSON array"},
      {"element not an object", "[1]", what + "[0]: expected an object"},
      {"placement not an object",
       R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"G","profile":"p","placement":[6,1]}])",
       what + "[0].placement: expected an object"},
      {"gpuUUID a number",
       R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":1,"profile":"p",)"
       R"("placement":{"start":0,"size":1}}])",
       what + "[0].gpuUUID: expected a string, got 1"},
      {"placement start beyond 31",
       R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"G","profile":"p",)"
       R"("placement":{"start":32,"size":1}}])",
       what + "[0].placement.start: 32 is out of range [0, 31]"},
      {"migUUID a number",
       R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"G","profile":"p",)"
       R"("placement":{"start":0,"size":1},"migUUID":5,"gpuInstanceID":1,"computeInstanceID":0}])",
       what + "[0].migUUID: expected a string, got 5"},
      {"gpuInstanceID negative",
       R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"G","profile":"p",)"
       R"("placement":{"start":0,"size":1},"migUUID":"M","gpuInstanceID":-1,)"
       R"("computeInstanceID":0}])",
       what + "[0].gpuInstanceID: -1 is out of range [0, 4294967295]"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto allocations = DecodeMigAllocations(c.text);
    ASSERT_FALSE(allocations.ok());
    EXPECT_EQ(allocations.error().message, c.want);
  }
}

TEST(DecodeMigAllocationsTest, NegativeIndexIsAnErrorNamingTheField) {
  struct Case {
    const char* text;
    const char* field;
  };
  const std::vector<Case> cases = {
      {R"([{"containerIndex":-1,"deviceIndex":0,"gpuUUID":"G","profile":"p",)"
       R"("placement":{"start":0,"size":1}}])",
       "containerIndex"},
      {R"([{"containerIndex":0,"deviceIndex":-1,"gpuUUID":"G","profile":"p",)"
       R"("placement":{"start":0,"size":1}}])",
       "deviceIndex"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.field);
    auto allocations = DecodeMigAllocations(c.text);
    ASSERT_FALSE(allocations.ok());
    EXPECT_THAT(allocations.error().message,
                HasSubstr(std::string(c.field) + ": -1 is out of range"));
  }
}

TEST(DecodeMigAllocationsTest, IncompleteElementIsAnErrorNamingItsPosition) {
  const std::string prefix = R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"G","profile":"p",)"
                             R"("placement":{"start":0,"size":1}},)";
  struct Case {
    const char* name;
    const char* second;  // the element at position 1
  };
  const std::vector<Case> cases = {
      {"no containerIndex",
       R"({"deviceIndex":1,"gpuUUID":"G","profile":"p","placement":{"start":1,"size":1}})"},
      {"no deviceIndex",
       R"({"containerIndex":0,"gpuUUID":"G","profile":"p","placement":{"start":1,"size":1}})"},
      {"no gpuUUID",
       R"({"containerIndex":0,"deviceIndex":1,"profile":"p","placement":{"start":1,"size":1}})"},
      {"empty gpuUUID", R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"","profile":"p",)"
                        R"("placement":{"start":1,"size":1}})"},
      {"no profile",
       R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"G","placement":{"start":1,"size":1}})"},
      {"empty profile", R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"G","profile":"",)"
                        R"("placement":{"start":1,"size":1}})"},
      {"no placement", R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"G","profile":"p"})"},
      {"placement of size zero",
       R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"G","profile":"p",)"
       R"("placement":{"start":1,"size":0}})"},
      {"placement without size",
       R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"G","profile":"p",)"
       R"("placement":{"start":1}})"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto allocations = DecodeMigAllocations(prefix + c.second + "]");
    ASSERT_FALSE(allocations.ok());
    EXPECT_EQ(allocations.error().message, std::string("MIG allocation 1") + kIncomplete);
  }
}

TEST(DecodeMigAllocationsTest, PartialRuntimeIdentityIsAnError) {
  const std::string base = R"({"containerIndex":0,"deviceIndex":0,"gpuUUID":"G","profile":"p",)"
                           R"("placement":{"start":0,"size":1})";
  const std::vector<const char*> partials = {
      R"(,"migUUID":"MIG-x")",
      R"(,"gpuInstanceID":1)",
      R"(,"computeInstanceID":0)",
      R"(,"migUUID":"MIG-x","gpuInstanceID":1)",
      R"(,"gpuInstanceID":1,"computeInstanceID":0)",
      R"(,"migUUID":"MIG-x","computeInstanceID":0)",
      R"(,"migUUID":"MIG-x","gpuInstanceID":1,"computeInstanceID":null)",
  };
  for (const char* extra : partials) {
    SCOPED_TRACE(extra);
    auto allocations = DecodeMigAllocations("[" + base + extra + "}]");
    ASSERT_FALSE(allocations.ok());
    EXPECT_EQ(allocations.error().message, std::string("MIG allocation 0") + kPartial);
  }
}

TEST(DecodeMigAllocationsTest, DuplicateContainerAndDeviceIndexIsAnError) {
  auto allocations =
      DecodeMigAllocations(R"([{"containerIndex":1,"deviceIndex":0,"gpuUUID":"G","profile":"p",)"
                           R"("placement":{"start":0,"size":1}},)"
                           R"({"containerIndex":1,"deviceIndex":1,"gpuUUID":"G","profile":"p",)"
                           R"("placement":{"start":1,"size":1}},)"
                           R"({"containerIndex":1,"deviceIndex":0,"gpuUUID":"H","profile":"q",)"
                           R"("placement":{"start":2,"size":1}}])");
  ASSERT_FALSE(allocations.ok());
  EXPECT_EQ(allocations.error().message,
            "MIG allocation 2 duplicates containerIndex 1, deviceIndex 0");
}

TEST(DecodeMigAllocationsTest, SameDeviceIndexInDifferentContainersIsAllowed) {
  auto allocations =
      DecodeMigAllocations(R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"G","profile":"p",)"
                           R"("placement":{"start":0,"size":1}},)"
                           R"({"containerIndex":1,"deviceIndex":0,"gpuUUID":"G","profile":"p",)"
                           R"("placement":{"start":1,"size":1}}])");
  ASSERT_TRUE(allocations.ok()) << allocations.error().message;
  EXPECT_EQ(allocations->size(), 2u);
}

}  // namespace
}  // namespace tessera::codec
