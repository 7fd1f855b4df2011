#include "core/sched/preemption.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/sched/scheduler.h"

namespace tessera::sched {
namespace {

std::string_view NamespaceOf(const std::string& key) {
  const size_t slash = key.find('/');
  return slash == std::string::npos ? std::string_view{} : std::string_view(key).substr(0, slash);
}

bool Selects(const DisruptionBudget& budget, const VictimCandidate& pod) {
  return budget.Selects(std::string(NamespaceOf(pod.key)), pod.labels);
}

// Calls `visit` with every `k`-subset of {0..n-1} in lexicographic order, until it returns false.
void ForEachSubset(size_t n, size_t k,
                   const std::function<bool(const std::vector<size_t>&)>& visit) {
  if (k == 0 || k > n) return;
  std::vector<size_t> idx(k);
  for (size_t i = 0; i < k; ++i) idx[i] = i;
  while (true) {
    if (!visit(idx)) return;
    size_t i = k;
    while (i > 0 && idx[i - 1] == n - k + (i - 1)) --i;
    if (i == 0) return;
    ++idx[i - 1];
    for (size_t j = i; j < k; ++j) idx[j] = idx[j - 1] + 1;
  }
}

int64_t HeldMemory(const state::PodReservation& r) {
  int64_t mem = 0;
  for (const auto& slot : r.devices) {
    for (const auto& cd : slot) mem += cd.used_mem;
  }
  return mem;
}

}  // namespace

int64_t CountPdbViolations(std::span<const VictimCandidate* const> victims,
                           std::span<const DisruptionBudget> budgets) {
  if (budgets.empty()) return 0;
  std::vector<int64_t> allowed;
  allowed.reserve(budgets.size());
  for (const auto& b : budgets) allowed.push_back(b.disruptions_allowed);
  int64_t violations = 0;
  for (const VictimCandidate* pod : victims) {
    bool violates = false;
    for (size_t b = 0; b < budgets.size(); ++b) {
      if (!Selects(budgets[b], *pod)) continue;
      if (--allowed[b] < 0) violates = true;
    }
    if (violates) ++violations;
  }
  return violations;
}

VictimSearch::VictimSearch(state::ClusterState& one_node, std::vector<VictimCandidate> candidates,
                           std::span<const DisruptionBudget> budgets)
    : one_(one_node), candidates_(std::move(candidates)), budgets_(budgets) {
  std::stable_sort(candidates_.begin(), candidates_.end(),
                   [](const VictimCandidate& a, const VictimCandidate& b) {
                     if (a.priority != b.priority) return a.priority > b.priority;
                     return a.key < b.key;
                   });
}

VictimSetCost VictimSearch::CostOf(const std::vector<size_t>& set) const {
  VictimSetCost cost;
  cost.victims = set.size();
  cost.highest_priority = std::numeric_limits<int32_t>::min();
  std::vector<const VictimCandidate*> pods;
  pods.reserve(set.size());
  for (const size_t i : set) {
    const VictimCandidate& c = candidates_[i];
    pods.push_back(&c);
    cost.highest_priority = std::max(cost.highest_priority, c.priority);
    cost.priority_sum += c.priority;
    cost.freed_mem += c.held_mem;
  }
  if (set.empty()) cost.highest_priority = 0;
  cost.pdb_violations = CountPdbViolations(pods, budgets_);
  return cost;
}

VictimSet VictimSearch::SetOf(const std::vector<size_t>& set) const {
  VictimSet out;
  for (const size_t i : set) out.pods.push_back(candidates_[i].key);
  out.cost = CostOf(set);
  return out;
}

bool VictimSearch::FitsWithout(const std::vector<size_t>& set, const std::function<bool()>& fits) {
  std::vector<state::PodReservation> removed;
  removed.reserve(set.size());
  for (const size_t i : set) {
    if (auto r = one_.RemovePod(candidates_[i].key)) removed.push_back(std::move(*r));
  }
  const bool ok = fits();
  for (auto& r : removed) one_.AddPod(std::move(r));
  return ok;
}

VictimSearch::Outcome VictimSearch::TrySetsOfSize(int size, const std::function<bool()>& fits,
                                                  std::optional<VictimSet>* best, int* evaluations,
                                                  int max_evaluations) {
  Outcome out;
  if (size <= 0) return out;
  ForEachSubset(candidates_.size(), static_cast<size_t>(size), [&](const std::vector<size_t>& set) {
    const VictimSetCost cost = CostOf(set);
    if (*best && !(cost < (*best)->cost)) return true;  // cannot beat it
    if (*evaluations >= max_evaluations) {
      out.stopped = true;
      return false;
    }
    ++*evaluations;
    if (FitsWithout(set, fits)) {
      *best = SetOf(set);
      out.improved = true;
    }
    return true;
  });
  return out;
}

bool VictimSearch::FitsWithAllGone(const std::function<bool()>& fits) {
  std::vector<size_t> all(candidates_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return FitsWithout(all, fits);
}

VictimSet VictimSearch::Reprieve(const std::function<bool()>& fits, int* evaluations) {
  std::vector<state::PodReservation> gone;
  for (const auto& c : candidates_) {
    if (auto r = one_.RemovePod(c.key)) gone.push_back(std::move(*r));
  }
  std::vector<size_t> victims;
  // `gone` follows candidates_ (every candidate holds a reservation on the node).
  for (size_t i = 0; i < gone.size(); ++i) {
    const std::string key = gone[i].key;
    one_.AddPod(gone[i]);
    ++*evaluations;
    if (fits()) continue;  // reprieved: it stays
    (void)one_.RemovePod(key);
    victims.push_back(i);
  }
  for (const size_t i : victims) one_.AddPod(std::move(gone[i]));
  return SetOf(victims);
}

NodeVictims FindVictims(state::ClusterState one_node, const model::Pod& pod,
                        const PolicyDefaults& defaults, std::span<const DisruptionBudget> budgets,
                        const std::set<std::string>& spared, const PreemptionLimits& limits) {
  NodeVictims out;
  using Verdict = NodeVictims::Verdict;
  std::vector<std::string> names;
  if (!one_node.node_list().empty()) names.push_back(one_node.node_list().front()->name);
  // The pod's own reservation (a filter's, not yet bound) is not in its way.
  (void)one_node.RemovePod(pod.Key());
  Scheduler scheduler(one_node, defaults);
  Decision first = scheduler.Evaluate(pod, &names, 0);
  if (first.passthrough()) {
    out.verdict = Verdict::kNotGpuPod;
    return out;
  }
  if (first.invalid_request()) {
    out.verdict = Verdict::kInvalidPod;
    return out;
  }
  if (first.scheduled()) {
    out.verdict = Verdict::kFitsNow;
    return out;
  }
  if (names.empty()) return out;  // kNoSet
  const state::NodeState& node = *one_node.node_list().front();
  auto fits = [&] { return scheduler.Evaluate(pod, &names, 0).scheduled(); };
  std::vector<VictimCandidate> candidates;
  for (const std::string& key : node.pods) {
    const state::PodReservation* r = one_node.pod(key);
    // Equal or higher priority is never evicted (kube-scheduler's rule); a pod without a uid
    // cannot be named to kube-scheduler.
    if (r == nullptr || r->uid.empty() || r->priority >= pod.priority || spared.contains(key)) {
      continue;
    }
    candidates.push_back({key, r->priority, HeldMemory(*r), r->labels});
  }
  VictimSearch search(one_node, std::move(candidates), budgets);
  ++out.evaluations;
  if (search.candidates().empty() || !search.FitsWithAllGone(fits)) {
    out.verdict = Verdict::kNoSet;
    return out;
  }
  const int largest = std::min(limits.max_victims, static_cast<int>(search.candidates().size()));
  bool stopped = false;
  for (int size = 1; size <= largest; ++size) {
    const auto step =
        search.TrySetsOfSize(size, fits, &out.victims, &out.evaluations, limits.max_evaluations);
    if (step.stopped) {
      stopped = true;
      break;
    }
    // A larger set costs more unless it breaks fewer budgets.
    if (out.victims && out.victims->cost.pdb_violations == 0) break;
  }
  const bool untried_sizes = largest < static_cast<int>(search.candidates().size());
  if (!out.victims) {
    // Every candidate gone works, so some set does: kube-scheduler's reprieve pass finds one.
    out.victims = search.Reprieve(fits, &out.evaluations);
    out.exhaustive = false;
  } else if (stopped || (untried_sizes && out.victims->cost.pdb_violations > 0)) {
    out.exhaustive = false;
  }
  out.verdict = Verdict::kVictims;
  return out;
}

}  // namespace tessera::sched
