// The agent's two ports speak the project's one error vocabulary: a failure's kind is its
// ErrorCode, and what the other side said rides along as its origin.

#include <gtest/gtest.h>

#include "agent/node_api.h"
#include "core/node/gpu_driver.h"

namespace tessera {
namespace {

TEST(ErrorVocabularyTest, DriverErrorsKeepTheNvmlCallAndCodeAndSayWhatKindTheyAre) {
  const Error e = node::DriverError("nvmlDeviceSetMigMode", 4, "GPU-a: Insufficient Permissions");
  EXPECT_EQ(e.message, "GPU-a: Insufficient Permissions");
  EXPECT_EQ(e.origin, "nvmlDeviceSetMigMode");
  EXPECT_EQ(e.origin_code, 4);
  EXPECT_EQ(e.code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(node::DriverError("f", 19, "").code, ErrorCode::kConflict);      // IN_USE
  EXPECT_EQ(node::DriverError("f", 6, "").code, ErrorCode::kNotFound);       // NOT_FOUND
  EXPECT_EQ(node::DriverError("f", 3, "").code, ErrorCode::kUnsupported);    // NOT_SUPPORTED
  EXPECT_EQ(node::DriverError("f", 2, "").code, ErrorCode::kInvalidInput);   // INVALID_ARGUMENT
  EXPECT_EQ(node::DriverError("f", 15, "").code, ErrorCode::kUnavailable);   // GPU_IS_LOST
  EXPECT_EQ(node::DriverError("f", 999, "").code, ErrorCode::kUnavailable);  // UNKNOWN
}

TEST(ErrorVocabularyTest, ApiFailuresKeepTheStatusAndSayWhatKindTheyAre) {
  const Error e = agent::ApiFailure(409, "patch pod ns/p: the object has been modified");
  EXPECT_EQ(e.code, ErrorCode::kConflict);
  EXPECT_EQ(e.origin, "HTTP");
  EXPECT_EQ(e.origin_code, 409);
  EXPECT_EQ(agent::ApiFailure(404, "").code, ErrorCode::kNotFound);
  EXPECT_EQ(agent::ApiFailure(403, "").code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(agent::ApiFailure(422, "").code, ErrorCode::kInvalidInput);
  EXPECT_EQ(agent::ApiFailure(429, "").code, ErrorCode::kUnavailable);
  EXPECT_EQ(agent::ApiFailure(503, "").code, ErrorCode::kUnavailable);
  const Error none = agent::ApiFailure(0, "get node n1: connection refused");
  EXPECT_EQ(none.code, ErrorCode::kUnavailable);
  EXPECT_EQ(none.origin, "");
  EXPECT_EQ(none.origin_code, 0);
}

}  // namespace
}  // namespace tessera
