#include "core/codec/node_lock.h"

#include <gtest/gtest.h>

namespace tessera::codec {
namespace {

TEST(NodeLockTest, ReadsHamisFormatAndTheLegacyOne) {
  const auto lock = ParseNodeLock("2026-12-01T08:00:00Z,default,train-1");
  ASSERT_TRUE(lock.has_value());
  EXPECT_EQ(lock->time, "2026-12-01T08:00:00Z");
  EXPECT_TRUE(lock->HeldBy("default", "train-1"));
  EXPECT_FALSE(lock->legacy());
  const auto legacy = ParseNodeLock("2026-12-01T08:00:00Z");
  ASSERT_TRUE(legacy.has_value());
  EXPECT_TRUE(legacy->legacy());
  EXPECT_FALSE(legacy->HeldBy("", ""));
  EXPECT_EQ(FormatNodeLock("T", "ns", "p"), "T,ns,p");
  EXPECT_EQ(ParseNodeLock(FormatNodeLock("T", "ns", "p"))->name, "p");
}

// The agent matched ",default,train" as a substring, so the lock of pod train-1 was taken for
// pod train's (and released by it).
TEST(NodeLockTest, APodIsMatchedByItsWholeNameAndNamespace) {
  const auto lock = ParseNodeLock("2026-12-01T08:00:00Z,default,train-1");
  ASSERT_TRUE(lock.has_value());
  EXPECT_FALSE(lock->HeldBy("default", "train"));
  EXPECT_FALSE(lock->HeldBy("def", "train-1"));
  EXPECT_FALSE(lock->HeldBy("fault", "train-1"));
}

TEST(NodeLockTest, AnythingElseIsNotALock) {
  EXPECT_FALSE(ParseNodeLock("").has_value());
  EXPECT_FALSE(ParseNodeLock("T,ns").has_value());
  EXPECT_FALSE(ParseNodeLock("T,ns,p,extra").has_value());
  EXPECT_FALSE(ParseNodeLock("T,,p").has_value());
  EXPECT_FALSE(ParseNodeLock("T,ns,").has_value());
}

}  // namespace
}  // namespace tessera::codec
