#pragma once

#include <string>

#include "core/common/result.h"
#include "core/config/scheduler_config.h"

namespace tessera::app {

// HAMi's device-config.yaml (--device-config-file); the defaults when `path` is empty.
Result<config::SchedulerConfig> LoadDeviceConfig(const std::string& path);

}  // namespace tessera::app
