#include "core/model/job_retries.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

namespace tessera::model {
namespace {

using ::testing::HasSubstr;

TEST(JobRetriesTest, KeepsOneRetryForTheJobsOwnFailures) {
  JobRetries job;
  job.ns = "ml";
  job.name = "train";
  EXPECT_EQ(job.EvictionsAllowed(), 5);  // the default backoffLimit 6, none failed
  job.failed = 5;
  EXPECT_EQ(job.EvictionsAllowed(), 0);
  EXPECT_EQ(job.WhyNoEviction(),
            "its Job ml/train would be left without a retry (backoffLimit 6, 5 failed) and its "
            "podFailurePolicy does not ignore evictions");
  job.failed = 9;  // more failed than the limit: never negative
  EXPECT_EQ(job.EvictionsAllowed(), 0);
  job.backoff_limit = 0;
  job.failed = 0;
  EXPECT_EQ(job.EvictionsAllowed(), 0);
}

TEST(JobRetriesTest, AnIgnoredDisruptionCostsNothingUnlessTheJobFinished) {
  JobRetries job;
  job.backoff_limit = 0;
  job.ignores_disruption = true;
  EXPECT_EQ(job.EvictionsAllowed(), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(job.WhyNoEviction(), "");
  job.finished = true;
  EXPECT_EQ(job.EvictionsAllowed(), 0);
  EXPECT_THAT(job.WhyNoEviction(), HasSubstr("has finished"));
}

TEST(JobRetriesTest, PerIndexLimitsAreNotCountedSoNothingMoves) {
  JobRetries job;
  job.per_index = true;
  EXPECT_EQ(job.EvictionsAllowed(), 0);
  EXPECT_THAT(job.WhyNoEviction(), HasSubstr("backoffLimitPerIndex"));
  job.ignores_disruption = true;
  EXPECT_GT(job.EvictionsAllowed(), 0);
}

}  // namespace
}  // namespace tessera::model
