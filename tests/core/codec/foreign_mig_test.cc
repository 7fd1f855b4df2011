#include "core/codec/foreign_mig.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::codec {
namespace {

ForeignMigInstance Instance(const std::string& gpu, const std::string& profile, uint32_t start,
                            uint32_t size, uint32_t gi = 0) {
  return ForeignMigInstance{gpu, profile, {start, size}, gi};
}

TEST(ForeignMigTest, EncodesInOneOrderAndDecodesWhatItEncodes) {
  const std::vector<ForeignMigInstance> a = {Instance("GPU-b", "1g.10gb", 6, 1, 13),
                                             Instance("GPU-a", "3g.40gb", 4, 4, 2),
                                             Instance("GPU-a", "1g.10gb", 0, 1, 9)};
  const std::vector<ForeignMigInstance> b = {a[2], a[0], a[1], a[0]};  // shuffled, a duplicate
  const std::string text = EncodeForeignMigInstances(a);
  EXPECT_EQ(text, EncodeForeignMigInstances(b));
  EXPECT_EQ(text, R"([{"gpu":"GPU-a","profile":"1g.10gb","start":0,"size":1,"gi":9},)"
                  R"({"gpu":"GPU-a","profile":"3g.40gb","start":4,"size":4,"gi":2},)"
                  R"({"gpu":"GPU-b","profile":"1g.10gb","start":6,"size":1,"gi":13}])");
  auto decoded = DecodeForeignMigInstances(text, "gpu-1");
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded.value(), CanonicalForeignMigInstances(a));
}

TEST(ForeignMigTest, NoInstanceIsNoValue) {
  EXPECT_EQ(EncodeForeignMigInstances({}), "");
  auto decoded = DecodeForeignMigInstances("", "gpu-1");
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded.value().empty());
  decoded = DecodeForeignMigInstances("[]", "gpu-1");
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded.value().empty());
}

TEST(ForeignMigTest, UnknownKeysAndAMissingGpuInstanceIdAreAccepted) {
  auto decoded = DecodeForeignMigInstances(
      R"([{"gpu":"GPU-a","profile":"2g.20gb","start":2,"size":2,"madeBy":"mig-parted"}])", "n");
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  ASSERT_EQ(decoded.value().size(), 1U);
  EXPECT_EQ(decoded.value()[0], Instance("GPU-a", "2g.20gb", 2, 2, 0));
}

TEST(ForeignMigTest, AtMost64AreKeptAndTheRestCounted) {
  std::vector<ForeignMigInstance> many;
  for (uint32_t i = 0; i < 70; ++i) {
    many.push_back(Instance("GPU-" + std::to_string(100 + i), "1g.10gb", 0, 1));
  }
  size_t dropped = 0;
  const auto kept = CanonicalForeignMigInstances(many, &dropped);
  EXPECT_EQ(kept.size(), kMaxForeignMigInstances);
  EXPECT_EQ(dropped, 6U);
  EXPECT_EQ(kept.front().gpu_uuid, "GPU-100");  // the first ones in the annotation's order
  auto decoded = DecodeForeignMigInstances(EncodeForeignMigInstances(many), "n");
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded.value().size(), kMaxForeignMigInstances);
}

// Every malformed value is an error naming the node, the annotation, the entry and the field.
TEST(ForeignMigTest, MalformedValuesAreErrorsNamingNodeAndField) {
  const std::string one = R"({"gpu":"GPU-a","profile":"1g.10gb","start":0,"size":1})";
  std::string sixty_five = "[";
  for (int i = 0; i < 65; ++i) sixty_five += (i > 0 ? "," : "") + one;
  sixty_five += "]";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "node gpu-1: annotation tessera.io/foreign-mig-instances"},
      {R"({"gpu":"GPU-a"})", "node gpu-1: annotation tessera.io/foreign-mig-instances: expected"},
      {"[1]", "tessera.io/foreign-mig-instances[0]: expected an object"},
      {R"([{"profile":"1g.10gb","start":0,"size":1}])", "[0].gpu: missing or empty"},
      {R"([{"gpu":7,"profile":"1g.10gb","start":0,"size":1}])", "[0].gpu: expected a string"},
      {R"([{"gpu":"GPU-a","start":0,"size":1}])", "[0].profile: missing or empty"},
      {R"([{"gpu":"GPU-a","profile":"1g.10gb","size":1}])", "[0].start: missing"},
      {R"([{"gpu":"GPU-a","profile":"1g.10gb","start":0}])", "[0].size: missing"},
      {R"([{"gpu":"GPU-a","profile":"1g.10gb","start":-1,"size":1}])", "[0].start"},
      {R"([{"gpu":"GPU-a","profile":"1g.10gb","start":32,"size":1}])", "[0].start"},
      {R"([{"gpu":"GPU-a","profile":"1g.10gb","start":0,"size":0}])", "[0].size"},
      {R"([{"gpu":"GPU-a","profile":"1g.10gb","start":30,"size":4}])", "[0].size: slices 30 to 33"},
      {R"([{"gpu":"GPU-a","profile":"1g.10gb","start":"0","size":1}])", "[0].start"},
      {R"([{"gpu":"GPU-a","profile":"1g.10gb","start":0,"size":1,"gi":-2}])", "[0].gi"},
      {"[" + one + R"(,{"gpu":")" + std::string(200, 'x') +
           R"(","profile":"1g.10gb","start":0,"size":1}])",
       "[1].gpu: 200 characters, at most 128"},
      {sixty_five, "65 instances, at most 64 allowed"},
      {"[" + std::string(40000, ' ') + "]", "40002 bytes, at most 32768 allowed"},
  };
  for (const auto& [text, expected] : cases) {
    auto decoded = DecodeForeignMigInstances(text, "gpu-1");
    ASSERT_FALSE(decoded.ok()) << text.substr(0, 80);
    EXPECT_NE(decoded.error().message.find(expected), std::string::npos) << decoded.error().message;
    EXPECT_NE(decoded.error().message.find("node gpu-1: annotation "), std::string::npos)
        << decoded.error().message;
  }
}

}  // namespace
}  // namespace tessera::codec
