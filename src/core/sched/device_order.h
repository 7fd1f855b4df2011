#pragma once

#include <vector>

#include "core/sched/preferences.h"
#include "core/sched/request.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// HAMi's device score (7.2), in float as HAMi computes it; the request terms are counted.
float DeviceScore(const model::GpuDevice& device, const state::DeviceUsage& usage,
                  const ContainerRequest& request, const ScoringWeights& weights);

// Device indices ordered as HAMi's DeviceUsageList.Less sorts them (7.3); Fit tries the end of
// this list first. Stable, so equal devices keep registration order.
std::vector<int> OrderDevices(const std::vector<model::GpuDevice>& devices,
                              const std::vector<float>& scores, const std::vector<int32_t>& used,
                              const PodPreferences& prefs);

}  // namespace tessera::sched
