#include "core/sched/topology.h"

#include <algorithm>
#include <cctype>

namespace tessera::sched {
namespace {

int32_t PairScore(const state::NodeState& node, int a, int b) {
  auto row = node.pair_scores.find(node.devices[a].uuid);
  if (row == node.pair_scores.end()) return 0;
  auto cell = row->second.find(node.devices[b].uuid);
  return cell == row->second.end() ? 0 : cell->second;
}

long Binomial(long n, long k) {
  long r = 1;
  for (long i = 1; i <= k; ++i) {
    r = r * (n - k + i) / i;
    if (r > kMaxTopologySubsets) return r;
  }
  return r;
}

}  // namespace

std::vector<int> PickByTopology(const state::NodeState& node, const std::vector<int>& candidates,
                                int count) {
  const int n = static_cast<int>(candidates.size());
  if (count >= n) return candidates;
  if (count == 1) {
    int best = 0;
    int64_t best_total = 0;
    for (int i = 0; i < n; ++i) {
      int64_t total = 0;
      for (int j = 0; j < n; ++j) {
        if (node.devices[candidates[i]].uuid != node.devices[candidates[j]].uuid) {
          total += PairScore(node, candidates[i], candidates[j]);
        }
      }
      if (i == 0 || total < best_total) {
        best = i;
        best_total = total;
      }
    }
    return {candidates[best]};
  }
  auto subset_score = [&](const std::vector<int>& idx) {
    int64_t total = 0;
    for (size_t i = 0; i < idx.size(); ++i) {
      for (size_t j = i + 1; j < idx.size(); ++j) {
        total += PairScore(node, candidates[idx[i]], candidates[idx[j]]);
      }
    }
    return total;
  };
  std::vector<int> best_idx;
  if (Binomial(n, count) <= kMaxTopologySubsets) {
    std::vector<int> idx(count);
    for (int i = 0; i < count; ++i) idx[i] = i;
    int64_t best_total = 0;
    while (true) {
      int64_t total = subset_score(idx);
      if (best_idx.empty() || total > best_total) {
        best_idx = idx;
        best_total = total;
      }
      int pos = count - 1;
      while (pos >= 0 && idx[pos] == n - count + pos) --pos;
      if (pos < 0) break;
      ++idx[pos];
      for (int i = pos + 1; i < count; ++i) idx[i] = idx[i - 1] + 1;
    }
  } else {
    // Greedy: grow from the first candidate, adding the best-linked one each time.
    best_idx = {0};
    std::vector<bool> taken(n, false);
    taken[0] = true;
    while (static_cast<int>(best_idx.size()) < count) {
      int pick = -1;
      int64_t pick_gain = 0;
      for (int c = 0; c < n; ++c) {
        if (taken[c]) continue;
        int64_t gain = 0;
        for (int t : best_idx) gain += PairScore(node, candidates[t], candidates[c]);
        if (pick < 0 || gain > pick_gain) {
          pick = c;
          pick_gain = gain;
        }
      }
      taken[pick] = true;
      best_idx.push_back(pick);
    }
    std::sort(best_idx.begin(), best_idx.end());
  }
  std::vector<int> out;
  out.reserve(best_idx.size());
  for (int i : best_idx) out.push_back(candidates[i]);
  return out;
}

namespace {

class JointSearch {
 public:
  JointSearch(const state::NodeState& node, const PodRequest& request, const PodPreferences& prefs)
      : node_(node) {
    for (size_t slot = 0; slot < request.slots.size(); ++slot) {
      const ContainerRequest& k = request.slots[slot];
      for (int32_t i = 0; i < k.nums; ++i) instances_.push_back({static_cast<int>(slot), k});
    }
    for (size_t dev = 0; dev < node.devices.size(); ++dev) {
      const model::GpuDevice& d = node.devices[dev];
      if (!d.IsMig() || !d.healthy || !node.usage[dev].Trusted()) continue;
      if (node.cordoned.count(d.uuid) > 0) continue;
      if (prefs.vgpu_mode && prefs.vgpu_mode->find(d.mode) == std::string::npos) continue;
      if (!prefs.use_uuids.empty() && std::find(prefs.use_uuids.begin(), prefs.use_uuids.end(),
                                                d.uuid) == prefs.use_uuids.end()) {
        continue;
      }
      if (std::find(prefs.nouse_uuids.begin(), prefs.nouse_uuids.end(), d.uuid) !=
          prefs.nouse_uuids.end()) {
        continue;
      }
      bool type_ok = prefs.use_types.empty();
      std::string type;
      for (char c : d.type) type += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      for (const auto& t : prefs.use_types) type_ok = type_ok || type.find(t) != std::string::npos;
      for (const auto& t : prefs.nouse_types)
        type_ok = type_ok && type.find(t) == std::string::npos;
      if (!type_ok) continue;
      if (prefs.gpu_policy.mutex && node.usage[dev].used != 0) continue;
      devices_.push_back(static_cast<int>(dev));
    }
    pending_.assign(node.devices.size(), {});
    owners_.assign(node.devices.size(), {});
    choice_.assign(instances_.size(), -1);
  }

  std::optional<SlotAssignments> Run(size_t num_slots) {
    if (instances_.empty() || devices_.empty()) return std::nullopt;
    if (!Visit(0)) return std::nullopt;
    SlotAssignments slots(num_slots);
    for (int dev : devices_) {
      if (pending_[dev].empty()) continue;
      auto arranged = node_.mig_models[dev].Arrange(node_.usage[dev].layout, pending_[dev]);
      const auto& profiles = node_.mig_models[dev].profiles();
      for (size_t j = 0; j < owners_[dev].size(); ++j) {
        const auto& c = (*arranged)[j];
        slots[owners_[dev][j]].push_back(DeviceAssignment{
            dev, profiles[c.profile].memory_mib, profiles[c.profile].core, c.profile, c.placement});
      }
    }
    return slots;
  }

 private:
  static constexpr long kBudget = 200000;

  mig::InstanceDemand Demand(size_t t, int dev) const {
    const ContainerRequest& k = instances_[t].second;
    int32_t mem = k.mem_mib;
    if (mem == 0) {
      mem = static_cast<int32_t>(
          static_cast<int64_t>(node_.mig_models[dev].LargestProfileMemory()) * k.mem_percent / 100);
    }
    return mig::InstanceDemand{mem, k.cores};
  }

  bool Visit(size_t t) {
    if (t == instances_.size()) return true;
    if (++calls_ > kBudget) return false;
    size_t first = 0;
    if (t > 0 && instances_[t - 1].first == instances_[t].first) first = choice_[t - 1];
    for (size_t i = first; i < devices_.size(); ++i) {
      int dev = devices_[i];
      pending_[dev].push_back(Demand(t, dev));
      if (node_.mig_models[dev].Arrange(node_.usage[dev].layout, pending_[dev])) {
        owners_[dev].push_back(instances_[t].first);
        choice_[t] = static_cast<int>(i);
        if (Visit(t + 1)) return true;
        owners_[dev].pop_back();
      }
      pending_[dev].pop_back();
    }
    return false;
  }

  const state::NodeState& node_;
  std::vector<std::pair<int, ContainerRequest>> instances_;
  std::vector<int> devices_;
  std::vector<std::vector<mig::InstanceDemand>> pending_;
  std::vector<std::vector<int>> owners_;
  std::vector<int> choice_;
  long calls_ = 0;
};

}  // namespace

std::optional<SlotAssignments> JointMigSearch(const state::NodeState& node,
                                              const PodRequest& request,
                                              const PodPreferences& prefs) {
  JointSearch search(node, request, prefs);
  return search.Run(request.slots.size());
}

}  // namespace tessera::sched
