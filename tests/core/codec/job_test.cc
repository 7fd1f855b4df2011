#include "core/codec/job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::codec {
namespace {

using ::testing::HasSubstr;

Result<model::JobRetries> Decode(const char* text) { return DecodeJob(Json::parse(text)); }

TEST(DecodeJobTest, ReadsTheLimitTheFailuresAndTheUid) {
  auto job = Decode(R"({"metadata": {"name": "train", "namespace": "ml", "uid": "u-1"},
                        "spec": {"backoffLimit": 2},
                        "status": {"failed": 1, "conditions": [{"type": "Suspended", "status": "True"}]}})");
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_EQ(job->Key(), "ml/train");
  EXPECT_EQ(job->uid, "u-1");
  EXPECT_EQ(job->backoff_limit, 2);
  EXPECT_EQ(job->failed, 1);
  EXPECT_FALSE(job->per_index);
  EXPECT_FALSE(job->ignores_disruption);
  EXPECT_FALSE(job->finished);
}

TEST(DecodeJobTest, DefaultsAreTheApisAndAFinishedJobIsSeen) {
  auto job = Decode(R"({"metadata": {"name": "j"},
                        "status": {"conditions": [{"type": "Complete", "status": "True"}]}})");
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_EQ(job->ns, "default");
  EXPECT_EQ(job->backoff_limit, 6);
  EXPECT_TRUE(job->finished);
  job = Decode(R"({"metadata": {"name": "j"}, "spec": {"backoffLimitPerIndex": 1}})");
  ASSERT_TRUE(job.ok());
  EXPECT_TRUE(job->per_index);
}

TEST(DecodeJobTest, OnlyAnIgnoreOnDisruptionTargetReachedFirstMakesEvictionsFree) {
  // The Ignore rule on DisruptionTarget (status defaults to True).
  auto job = Decode(R"({"metadata": {"name": "j"}, "spec": {"podFailurePolicy": {"rules": [
      {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}})");
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_TRUE(job->ignores_disruption);
  // An exit-code rule that fails the Job comes first: a SIGTERM'd container may match it.
  job = Decode(R"({"metadata": {"name": "j"}, "spec": {"podFailurePolicy": {"rules": [
      {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [0]}},
      {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}})");
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_FALSE(job->ignores_disruption);
  // An exit-code Ignore before it ignores too; another condition's rule is passed over.
  job = Decode(R"({"metadata": {"name": "j"}, "spec": {"podFailurePolicy": {"rules": [
      {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [143]}},
      {"action": "FailJob", "onPodConditions": [{"type": "ConfigIssue"}]},
      {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}}})");
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_TRUE(job->ignores_disruption);
  // DisruptionTarget counted, or its False status: not ignored.
  job = Decode(R"({"metadata": {"name": "j"}, "spec": {"podFailurePolicy": {"rules": [
      {"action": "Count", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}})");
  ASSERT_TRUE(job.ok());
  EXPECT_FALSE(job->ignores_disruption);
  job = Decode(R"({"metadata": {"name": "j"}, "spec": {"podFailurePolicy": {"rules": [
      {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "False"}]}]}}})");
  ASSERT_TRUE(job.ok());
  EXPECT_FALSE(job->ignores_disruption);
}

TEST(DecodeJobTest, MalformedFieldsAreNamed) {
  EXPECT_THAT(Decode(R"([])").error().message, HasSubstr("Job: expected an object"));
  EXPECT_THAT(Decode(R"({"spec": {}})").error().message, HasSubstr("metadata missing"));
  EXPECT_THAT(Decode(R"({"metadata": {"name": "j", "namespace": "ml"},
                         "spec": {"backoffLimit": -1}})")
                  .error()
                  .message,
              HasSubstr("Job ml/j: spec.backoffLimit"));
  EXPECT_THAT(Decode(R"({"metadata": {"name": "j"}, "status": {"failed": "x"}})").error().message,
              HasSubstr("Job default/j: status.failed"));
  EXPECT_THAT(Decode(R"({"metadata": {"name": "j"}, "spec": {"podFailurePolicy": {"rules": {}}}})")
                  .error()
                  .message,
              HasSubstr("spec.podFailurePolicy.rules: expected a list"));
  EXPECT_THAT(Decode(R"({"metadata": {"name": "j"}, "spec": {"podFailurePolicy": {"rules": [
      {"action": "Ignore", "onPodConditions": [1]}]}}})")
                  .error()
                  .message,
              HasSubstr("onPodConditions: expected objects"));
  EXPECT_THAT(Decode(R"({"metadata": {"name": "j"}, "status": {"conditions": 3}})").error().message,
              HasSubstr("status.conditions: expected a list"));
}

}  // namespace
}  // namespace tessera::codec
