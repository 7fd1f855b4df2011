#include "core/sched/device_order.h"

#include <algorithm>
#include <numeric>

namespace tessera::sched {

float DeviceScore(const model::GpuDevice& d, const state::DeviceUsage& u, const ContainerRequest& r,
                  const ScoringWeights& w) {
  if (d.count == 0 || d.total_cores == 0 || d.total_mem_mib == 0) return 0;
  int64_t mem = r.mem_mib;
  if (r.mem_percent != kMemPercentUnset && r.mem_percent != 0) {
    mem = static_cast<int64_t>(d.total_mem_mib) * r.mem_percent / 100;
  }
  float slot = static_cast<float>(1 + u.used) / static_cast<float>(d.count);
  float core = static_cast<float>(r.cores + u.used_cores) / static_cast<float>(d.total_cores);
  float memory = static_cast<float>(mem + u.used_mem) / static_cast<float>(d.total_mem_mib);
  return 10.0F * (static_cast<float>(w.slot) * slot + static_cast<float>(w.core) * core +
                  static_cast<float>(w.memory) * memory);
}

std::vector<int> OrderDevices(const std::vector<model::GpuDevice>& devices,
                              const std::vector<float>& scores, const std::vector<int32_t>& used,
                              const PodPreferences& prefs) {
  std::vector<int> order(devices.size());
  std::iota(order.begin(), order.end(), 0);
  const GpuPolicy& policy = prefs.gpu_policy;
  auto numa = [&](int i) { return devices[i].numa; };
  if (policy.IsChain() || (prefs.numa_bind && policy.tokens.size() > 1)) {
    std::vector<std::string> chain = policy.Chain(prefs.numa_bind);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      for (const auto& key : chain) {
        if (key == "binpack" && scores[a] != scores[b]) return scores[a] < scores[b];
        if (key == "spread" && scores[a] != scores[b]) return scores[a] > scores[b];
        if (key == "numa" && numa(a) != numa(b)) return numa(a) < numa(b);
      }
      return devices[a].index < devices[b].index;
    });
    return order;
  }
  const std::string single = policy.Single();
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (single == "mutex") {
      if (used[a] != used[b]) return used[a] > used[b];
      return numa(a) < numa(b);
    }
    if (prefs.numa_bind) {
      if (single == "binpack") {
        if (numa(a) == numa(b)) return scores[a] < scores[b];
        return numa(a) > numa(b);
      }
      if (numa(a) == numa(b)) return scores[a] > scores[b];
      return numa(a) < numa(b);
    }
    if (single == "binpack") {
      if (scores[a] != scores[b]) return scores[a] < scores[b];
      return numa(a) < numa(b);
    }
    if (scores[a] != scores[b]) return scores[a] > scores[b];
    return numa(a) < numa(b);
  });
  return order;
}

}  // namespace tessera::sched
