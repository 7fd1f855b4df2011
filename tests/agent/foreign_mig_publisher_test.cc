// The agent tells the scheduler which slices the MIG instances tessera did not create take: the
// node annotation tessera.io/foreign-mig-instances, kept equal to what the agent knows, and a
// Node Event each time the set changes.

#include "agent/foreign_mig_publisher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/model/annotations.h"
#include "fake_node_api.h"

namespace tessera::agent {
namespace {

using testing::FakeNodeApi;
using ::testing::HasSubstr;

const std::string kKey(model::annotations::kForeignMigInstances);
constexpr int64_t kVerifyMs = 30000;

node::DriverMigInstance Instance(const std::string& gpu, uint32_t start, uint32_t gi) {
  node::DriverMigInstance i;
  i.gpu_uuid = gpu;
  i.gpu_instance_id = gi;
  i.profile = "1g.10gb";
  i.placement = {start, 1};
  return i;
}

ReconcileReport Found(const std::vector<node::DriverMigInstance>& foreign,
                      const std::set<std::string>& listed) {
  ReconcileReport r;
  r.foreign = foreign;
  r.listed_gpus = listed;
  return r;
}

class ForeignMigPublisherTest : public ::testing::Test {
 protected:
  ForeignMigPublisherTest() { api.node.name = "gpu-1"; }
  const std::string* Published() const { return api.node.Annotation(kKey); }

  FakeNodeApi api;
  ForeignMigPublisher publisher{api, kVerifyMs};
  const std::set<std::string> mig{"GPU-a", "GPU-b"};
};

TEST_F(ForeignMigPublisherTest, PublishesTheSetAndAnEventWhenItChanges) {
  ForeignMigSync s = publisher.Sync(Found({Instance("GPU-a", 0, 9)}, mig), mig, 0);
  EXPECT_TRUE(s.changed);
  EXPECT_TRUE(s.patched);
  EXPECT_FALSE(s.error);
  ASSERT_NE(Published(), nullptr);
  EXPECT_EQ(*Published(), R"([{"gpu":"GPU-a","profile":"1g.10gb","start":0,"size":1,"gi":9}])");
  ASSERT_EQ(api.node_events.size(), 1U);
  EXPECT_THAT(api.node_events[0],
              HasSubstr("ForeignMigInstances: 1 MIG instance(s) on this node's GPUs were not "
                        "created by tessera: GPU-a 1g.10gb at slice 0 (GPU instance 9)"));
  EXPECT_TRUE(api.node_event_warnings[0]);

  // The same set again: nothing written, no Event.
  s = publisher.Sync(Found({Instance("GPU-a", 0, 9)}, mig), mig, 1000);
  EXPECT_FALSE(s.changed);
  EXPECT_FALSE(s.patched);
  EXPECT_EQ(api.node_events.size(), 1U);
  EXPECT_EQ(api.node_patches, 1);

  // A second instance: the Event names the new one.
  s = publisher.Sync(Found({Instance("GPU-a", 0, 9), Instance("GPU-b", 6, 13)}, mig), mig, 2000);
  EXPECT_TRUE(s.patched);
  ASSERT_EQ(api.node_events.size(), 2U);
  EXPECT_THAT(api.node_events[1], HasSubstr("; new: GPU-b 1g.10gb at slice 6 (GPU instance 13)"));

  // All gone: the key is deleted, and a Normal Event says so.
  s = publisher.Sync(Found({}, mig), mig, 3000);
  EXPECT_TRUE(s.patched);
  EXPECT_EQ(Published(), nullptr);
  ASSERT_EQ(api.node_events.size(), 3U);
  EXPECT_THAT(api.node_events[2], HasSubstr("no MIG instance that tessera did not create is left"));
  EXPECT_THAT(api.node_events[2], HasSubstr("gone: GPU-a 1g.10gb at slice 0"));
  EXPECT_FALSE(api.node_event_warnings[2]);
}

// Compared with what the node carries, not with what was written last.
TEST_F(ForeignMigPublisherTest, ADeletedOrEditedAnnotationIsRestored) {
  publisher.Sync(Found({Instance("GPU-a", 0, 9)}, mig), mig, 0);
  const std::string written = *Published();
  api.node.annotations.erase(kKey);
  // Not read again before the interval...
  publisher.Sync(Found({Instance("GPU-a", 0, 9)}, mig), mig, kVerifyMs - 1);
  EXPECT_EQ(Published(), nullptr);
  // ...then restored.
  ForeignMigSync s = publisher.Sync(Found({Instance("GPU-a", 0, 9)}, mig), mig, kVerifyMs);
  EXPECT_TRUE(s.patched);
  ASSERT_NE(Published(), nullptr);
  EXPECT_EQ(*Published(), written);
  api.node.annotations[kKey] = "[]";
  publisher.Sync(Found({Instance("GPU-a", 0, 9)}, mig), mig, 2 * kVerifyMs);
  EXPECT_EQ(*Published(), written);
  EXPECT_EQ(api.node_events.size(), 1U);  // the set itself never changed
}

// Forget nothing on partial knowledge: a GPU whose listing failed keeps what was known of it.
TEST_F(ForeignMigPublisherTest, AGpuThatCouldNotBeListedKeepsItsInstances) {
  publisher.Sync(Found({Instance("GPU-a", 0, 9), Instance("GPU-b", 2, 3)}, mig), mig, 0);
  // GPU-b's listing failed: only GPU-a's instances are known anew (it has none now).
  ForeignMigSync s = publisher.Sync(Found({}, {"GPU-a"}), mig, 1000);
  ASSERT_EQ(publisher.known().size(), 1U);
  EXPECT_EQ(publisher.known()[0].gpu_uuid, "GPU-b");
  EXPECT_THAT(s.change, HasSubstr("gone: GPU-a"));
  // A manager that could not list anything (its ledger not loaded) changes nothing.
  s = publisher.Sync(ReconcileReport{}, mig, 2000);
  EXPECT_FALSE(s.changed);
  EXPECT_EQ(publisher.known().size(), 1U);
  // A GPU no longer registered in MIG mode keeps nothing.
  s = publisher.Sync(ReconcileReport{}, {"GPU-a"}, 3000);
  EXPECT_TRUE(publisher.known().empty());
  EXPECT_EQ(Published(), nullptr);
}

// After a restart, what the node lists stands for what was known: an unchanged set is neither
// written nor reported again, and a GPU whose first listing fails keeps its instances.
TEST_F(ForeignMigPublisherTest, ARestartStartsFromWhatTheNodeLists) {
  api.node.annotations[kKey] = codec::EncodeForeignMigInstances(
      {{"GPU-a", "1g.10gb", {0, 1}, 9}, {"GPU-b", "1g.10gb", {2, 1}, 3}});
  ForeignMigSync s = publisher.Sync(Found({Instance("GPU-a", 0, 9)}, {"GPU-a"}), mig, 0);
  EXPECT_FALSE(s.changed);
  EXPECT_FALSE(s.patched);
  EXPECT_TRUE(api.node_events.empty());
  EXPECT_EQ(api.node_reads, 1);  // one read for both the start and the comparison
  EXPECT_EQ(publisher.known().size(), 2U);
}

TEST_F(ForeignMigPublisherTest, AFailedWriteIsRetriedOnBackOff) {
  api.node_failure = ApiFailure(503, "the API server is unavailable");
  ForeignMigSync s = publisher.Sync(Found({Instance("GPU-a", 0, 9)}, mig), mig, 0);
  ASSERT_TRUE(s.error);
  EXPECT_THAT(*s.error, HasSubstr("the API server is unavailable"));
  EXPECT_EQ(s.failures, 1);
  EXPECT_EQ(s.retry_in_ms, 1000);
  EXPECT_EQ(api.node_events.size(), 1U);  // the change is recorded all the same
  // Before the back-off has passed nothing is tried, nor logged.
  const int reads = api.node_reads;
  s = publisher.Sync(Found({Instance("GPU-a", 0, 9)}, mig), mig, 500);
  EXPECT_FALSE(s.error);
  EXPECT_EQ(api.node_reads, reads);
  s = publisher.Sync(Found({Instance("GPU-a", 0, 9)}, mig), mig, 1000);
  ASSERT_TRUE(s.error);
  EXPECT_EQ(s.retry_in_ms, 2000);
  // The API server is back: written at the next due try.
  api.node_failure.reset();
  s = publisher.Sync(Found({Instance("GPU-a", 0, 9)}, mig), mig, 3000);
  EXPECT_FALSE(s.error);
  EXPECT_TRUE(s.patched);
  ASSERT_NE(Published(), nullptr);
}

TEST_F(ForeignMigPublisherTest, ANodeWithoutMigGpusIsReadOnceAndCleanedOfAStaleValue) {
  api.node.annotations[kKey] = "not json";
  publisher.Sync(ReconcileReport{}, {}, 0);
  EXPECT_EQ(Published(), nullptr);
  publisher.Sync(ReconcileReport{}, {}, 10 * kVerifyMs);
  EXPECT_EQ(api.node_reads, 1);
  EXPECT_TRUE(api.node_events.empty());
}

TEST_F(ForeignMigPublisherTest, MoreThanTheLimitArePublishedUpToIt) {
  std::vector<node::DriverMigInstance> many;
  std::set<std::string> gpus;
  for (uint32_t g = 0; g < 10; ++g) {
    const std::string gpu = "GPU-" + std::to_string(g);
    gpus.insert(gpu);
    for (uint32_t s = 0; s < 7; ++s) many.push_back(Instance(gpu, s, s + 1));
  }
  ForeignMigSync s = publisher.Sync(Found(many, gpus), gpus, 0);
  EXPECT_EQ(s.dropped, 6U);
  EXPECT_EQ(publisher.known().size(), codec::kMaxForeignMigInstances);
  EXPECT_THAT(s.change, HasSubstr("6 more are not published (at most 64)"));
  auto decoded = codec::DecodeForeignMigInstances(*Published(), "gpu-1");
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded.value().size(), codec::kMaxForeignMigInstances);
}

}  // namespace
}  // namespace tessera::agent
