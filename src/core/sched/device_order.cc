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

void OrderDevices(const std::vector<model::GpuDevice>& devices, std::span<const float> scores,
                  std::span<const int32_t> used, const PodPreferences& prefs,
                  std::span<int> order) {
  std::iota(order.begin(), order.end(), 0);
  const GpuPolicy& policy = prefs.gpu_policy;
  auto numa = [&](int i) { return devices[i].numa; };
  // The policy's names are resolved once, not in every comparison.
  if (policy.IsChain() || (prefs.numa_bind && policy.tokens.size() > 1)) {
    enum class Key { kBinpack, kSpread, kNuma, kOther };
    std::vector<Key> chain;
    for (const auto& key : policy.Chain(prefs.numa_bind)) {
      chain.push_back(key == "binpack"  ? Key::kBinpack
                      : key == "spread" ? Key::kSpread
                      : key == "numa"   ? Key::kNuma
                                        : Key::kOther);
    }
    StableSortIndices(order, [&](int a, int b) {
      for (const Key key : chain) {
        if (key == Key::kBinpack && scores[a] != scores[b]) return scores[a] < scores[b];
        if (key == Key::kSpread && scores[a] != scores[b]) return scores[a] > scores[b];
        if (key == Key::kNuma && numa(a) != numa(b)) return numa(a) < numa(b);
      }
      return devices[a].index < devices[b].index;
    });
    return;
  }
  const std::string single = policy.Single();
  const bool mutex = single == "mutex";
  const bool binpack = single == "binpack";
  StableSortIndices(order, [&](int a, int b) {
    if (mutex) {
      if (used[a] != used[b]) return used[a] > used[b];
      return numa(a) < numa(b);
    }
    if (prefs.numa_bind) {
      if (binpack) {
        if (numa(a) == numa(b)) return scores[a] < scores[b];
        return numa(a) > numa(b);
      }
      if (numa(a) == numa(b)) return scores[a] > scores[b];
      return numa(a) < numa(b);
    }
    if (binpack) {
      if (scores[a] != scores[b]) return scores[a] < scores[b];
      return numa(a) < numa(b);
    }
    if (scores[a] != scores[b]) return scores[a] > scores[b];
    return numa(a) < numa(b);
  });
}

std::vector<int> HamiVisitOrder(const state::NodeState& node, const ContainerRequest& request,
                                const PodPreferences& prefs) {
  const size_t n = node.devices.size();
  std::vector<float> scores(n);
  std::vector<int32_t> used(n);
  for (size_t i = 0; i < n; ++i) {
    scores[i] = DeviceScore(node.devices[i], node.usage[i], request, prefs.weights);
    used[i] = node.usage[i].used;
  }
  std::vector<int> order(n);
  OrderDevices(node.devices, scores, used, prefs, order);
  std::reverse(order.begin(), order.end());
  return order;
}

}  // namespace tessera::sched
