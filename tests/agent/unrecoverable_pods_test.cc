#include "agent/unrecoverable_pods.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::agent {
namespace {

using ::testing::HasSubstr;

RecreatedInstance Recreated(const std::string& uid, const std::string& before,
                            const std::string& after) {
  RecreatedInstance r;
  r.pod = "ns/" + uid;
  r.pod_uid = uid;
  r.previous_mig_uuid = before;
  r.allocation.runtime = codec::MigRuntimeIdentity{after, 1, 0};
  r.message = "recreated";
  return r;
}

node::LostInstance Lost(const std::string& uid) {
  node::LostInstance l;
  l.pod = "ns/" + uid;
  l.pod_uid = uid;
  l.message = "slices taken";
  return l;
}

TEST(UnrecoverablePodsTest, ARecreatedInstanceUnderANewUuidFailsItsPodAtOnce) {
  UnrecoverablePods judge(60000);
  ReconcileReport report;
  report.recreated = {Recreated("a", "MIG-old", "MIG-new"), Recreated("b", "", "MIG-new"),
                      Recreated("c", "MIG-same", "MIG-same")};
  auto failures = judge.Judge(report, 0);
  ASSERT_EQ(failures.size(), 1U);  // b was never handed a UUID; c kept its own
  EXPECT_EQ(failures[0].pod_uid, "a");
  EXPECT_EQ(failures[0].reason, "MigInstanceReplaced");
  EXPECT_THAT(failures[0].message, HasSubstr("controller replaces it"));
}

TEST(UnrecoverablePodsTest, ALostInstanceFailsItsPodOnlyAfterTheGrace) {
  UnrecoverablePods judge(60000);
  ReconcileReport report;
  report.lost = {Lost("a")};
  EXPECT_TRUE(judge.Judge(report, 1000).empty());
  EXPECT_TRUE(judge.Judge(report, 60999).empty());
  auto failures = judge.Judge(report, 61000);
  ASSERT_EQ(failures.size(), 1U);
  EXPECT_EQ(failures[0].reason, "MigInstanceLost");
  EXPECT_THAT(failures[0].message, HasSubstr("lost for 60 s"));
}

TEST(UnrecoverablePodsTest, APassWithoutTheLossStartsTheGraceAgain) {
  UnrecoverablePods judge(60000);
  ReconcileReport lost;
  lost.lost = {Lost("a")};
  EXPECT_TRUE(judge.Judge(lost, 0).empty());
  EXPECT_TRUE(judge.Judge(ReconcileReport{}, 30000).empty());  // recreated, or the pod ended
  EXPECT_TRUE(judge.Judge(lost, 70000).empty());               // lost again: a new grace
  EXPECT_EQ(judge.Judge(lost, 130000).size(), 1U);
}

TEST(UnrecoverablePodsTest, ZeroGraceNeverFailsAPod) {
  UnrecoverablePods judge(0);
  ReconcileReport report;
  report.recreated = {Recreated("a", "MIG-old", "MIG-new")};
  report.lost = {Lost("b")};
  EXPECT_TRUE(judge.Judge(report, 0).empty());
  EXPECT_TRUE(judge.Judge(report, 1'000'000).empty());
}

}  // namespace
}  // namespace tessera::agent
