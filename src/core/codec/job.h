#pragma once

#include "core/codec/json_util.h"
#include "core/common/result.h"
#include "core/model/job_retries.h"

namespace tessera::codec {

// batch/v1 Job JSON to what an eviction costs it: metadata (name, namespace, uid),
// spec.backoffLimit, spec.backoffLimitPerIndex, spec.podFailurePolicy.rules, status.failed and
// status.conditions. Errors name the Job and the field.
Result<model::JobRetries> DecodeJob(const Json& j);

}  // namespace tessera::codec
