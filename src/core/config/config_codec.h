#pragma once

#include "core/codec/json_util.h"
#include "core/common/result.h"
#include "core/config/scheduler_config.h"

namespace tessera::config {

// HAMi's device-config.yaml (already turned into JSON by the file adapter). The `nvidia` section
// is read; other vendors' sections are ignored with a warning. Errors name the field.
Result<SchedulerConfig> DecodeSchedulerConfig(const codec::Json& root);

}  // namespace tessera::config
