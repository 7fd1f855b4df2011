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

}  // namespace tessera::sched
