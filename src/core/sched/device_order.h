#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "core/sched/preferences.h"
#include "core/sched/request.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// std::stable_sort of device indices, without its heap buffer for the few devices of a node
// (insertion sort up to 32): the same order, as a stable sort's result is unique.
template <class Less>
void StableSortIndices(std::span<int> order, Less less) {
  if (order.size() > 32) {
    std::stable_sort(order.begin(), order.end(), less);
    return;
  }
  for (size_t i = 1; i < order.size(); ++i) {
    const int value = order[i];
    size_t j = i;
    for (; j > 0 && less(value, order[j - 1]); --j) order[j] = order[j - 1];
    order[j] = value;
  }
}

// HAMi's device score (7.2), in float as HAMi computes it; the request terms are counted.
float DeviceScore(const model::GpuDevice& device, const state::DeviceUsage& usage,
                  const ContainerRequest& request, const ScoringWeights& weights);

// Device indices ordered as HAMi's DeviceUsageList.Less sorts them (7.3); Fit tries the end of
// this list first. Stable, so equal devices keep registration order. `order` has one entry per
// device; `scores` and `used` are per device.
void OrderDevices(const std::vector<model::GpuDevice>& devices, std::span<const float> scores,
                  std::span<const int32_t> used, const PodPreferences& prefs, std::span<int> order);

// The order in which HAMi's Fit visits a node's devices for one container of `request` under the
// pod's GPU policy and scoring weights, as the node is now (Fit scans OrderDevices' list from its
// end: this is that list reversed). For callers outside a fit, such as the MIG benchmark's HAMi
// baselines.
std::vector<int> HamiVisitOrder(const state::NodeState& node, const ContainerRequest& request,
                                const PodPreferences& prefs);

}  // namespace tessera::sched
