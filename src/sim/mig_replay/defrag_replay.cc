#include "sim/mig_replay/defrag_replay.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "core/sched/defrag.h"
#include "sim/mig_replay/baselines.h"
#include "sim/mig_replay/tessera_request.h"
#include "sim/replay/seed_stats.h"

namespace tessera::sim::mig_replay {
namespace {

// One plan's search budget (scheduling cycles on copies of the cluster). The planner's default
// (4000) is sized for one plan on demand; a replay plans for every waiting type every round,
// mostly for pods that no eviction admits, and this bounds what a round costs. A plan whose
// budget runs out admits nothing, like any other refusal.
constexpr int kRoundEvaluations = 500;

class TesseraDefragmenter : public Defragmenter {
 public:
  TesseraDefragmenter(MigCluster& cluster, std::vector<TesseraMigRequest> requests)
      : cluster_(cluster), requests_(std::move(requests)) {}

  // One plan per waiting request, oldest first, for one request of each type: requests of one
  // type are the same pod, so if the oldest cannot be admitted neither can a younger one (as
  // the pending queue's retry rounds assume). Each plan has its own search budget: handed the
  // whole queue, the planner spends it on the oldest request, which under overload is one that
  // no eviction admits. After an admission, the scan starts again from the oldest.
  DefragRound Run(std::span<const size_t> waiting, const std::vector<Arrival>& arrivals,
                  int max_evictions) override {
    DefragRound round;
    std::set<size_t> admitted;
    std::set<int> refused_types;
    bool admitting = true;
    while (admitting && round.evictions < max_evictions) {
      admitting = false;
      std::set<int> tried;
      for (const size_t i : waiting) {
        const int type = arrivals[i].type;
        if (admitted.contains(i) || refused_types.contains(type) || !tried.insert(type).second) {
          continue;
        }
        const std::vector<model::Pod> pending = {PodOf(i, arrivals)};
        const sched::DefragPlan plan = Plan(pending, arrivals, max_evictions - round.evictions);
        if (plan.admitted.empty()) {
          refused_types.insert(type);
          continue;
        }
        CarryOut(plan, arrivals, round);
        admitted.insert(i);
        admitting = true;
        break;
      }
    }
    return round;
  }

 private:
  sched::DefragPlan Plan(const std::vector<model::Pod>& pending,
                         const std::vector<Arrival>& arrivals, int max_evictions) const {
    std::vector<model::Pod> running;
    for (const auto& entry : cluster_.state().pods()) {
      const std::optional<size_t> i = ArrivalIndex(entry.first);
      if (i && *i < arrivals.size()) running.push_back(PodOf(*i, arrivals));
    }
    sched::DefragLimits limits;
    limits.max_evictions = max_evictions;
    limits.max_evaluations = kRoundEvaluations;
    limits.raise_placeability = false;
    return sched::PlanDefrag(cluster_.state(), pending, running, defaults_, {}, {}, limits);
  }

  // Commits the plan's own reservations in the plan's order, as it played them out on its copy:
  // for each admitted pod, its evicted pods leave, it takes their room, they are placed again.
  void CarryOut(const sched::DefragPlan& plan, const std::vector<Arrival>& arrivals,
                DefragRound& round) {
    std::map<std::string, const sched::DefragStep*> steps;
    for (const sched::DefragStep& step : plan.steps) steps.emplace(step.pod, &step);
    for (const sched::AdmittedPod& admitted : plan.admitted) {
      for (const std::string& key : admitted.evicted) {
        round.moved_served_change -= cluster_.ServedSlices(key, TypeOf(key, arrivals));
        cluster_.Release(key);
      }
      cluster_.Reserve(admitted.reservation);
      for (const std::string& key : admitted.evicted) {
        cluster_.Reserve(steps.at(key)->replaced_reservation);
        round.moved_served_change += cluster_.ServedSlices(key, TypeOf(key, arrivals));
        ++round.evictions;
      }
      round.admitted.push_back(*ArrivalIndex(admitted.pod));
    }
  }

  model::Pod PodOf(size_t i, const std::vector<Arrival>& arrivals) const {
    const int type = arrivals[i].type;
    return TesseraMigPod(ArrivalKey(i), cluster_.workload().types[type].count, requests_[type]);
  }

  static int TypeOf(const std::string& key, const std::vector<Arrival>& arrivals) {
    return arrivals[*ArrivalIndex(key)].type;
  }

  MigCluster& cluster_;
  std::vector<TesseraMigRequest> requests_;  // per request type
  // The `tessera` policy's: the production node and GPU ranking.
  sched::PolicyDefaults defaults_;
};

}  // namespace

std::string DefragPolicyName(int evictions_per_hour) {
  return std::string(kDefragPolicyPrefix) + std::to_string(evictions_per_hour);
}

std::optional<int> DefragPolicyBudget(std::string_view policy) {
  if (!policy.starts_with(kDefragPolicyPrefix)) return std::nullopt;
  const std::string_view digits = policy.substr(kDefragPolicyPrefix.size());
  int budget = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), budget);
  if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() || budget < 0) {
    return std::nullopt;
  }
  return budget;
}

DefragSchedule MakeDefragSchedule(int evictions_per_hour, double interval_minutes,
                                  double mean_lifetime_minutes) {
  DefragSchedule schedule;
  schedule.evictions_per_window = evictions_per_hour;
  schedule.window = 60.0 / mean_lifetime_minutes;
  schedule.interval = interval_minutes / mean_lifetime_minutes;
  return schedule;
}

double WaitP95(const RunMetrics& metrics) {
  std::vector<float> waits;
  for (const auto& of_type : metrics.waits_by_type) {
    waits.insert(waits.end(), of_type.begin(), of_type.end());
  }
  if (waits.empty()) return 0;
  std::sort(waits.begin(), waits.end());
  const auto rank = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(waits.size())));
  return waits[std::max<size_t>(rank, 1) - 1];
}

std::string DefragTableMarkdown(const std::vector<RunRecord>& records,
                                double mean_lifetime_minutes) {
  using CellKey = std::tuple<std::string, std::string, std::string>;  // fleet, workload, protocol
  std::map<std::tuple<std::string, std::string, std::string, uint64_t>, const RunRecord*> plain;
  for (const RunRecord& r : records) {
    if (r.policy == kPolicyTessera) plain[{r.fleet, r.workload, r.protocol, r.seed}] = &r;
  }
  // Rows in the records' order; per row, the (tessera, with defrag) pairs of its seeds.
  std::vector<std::pair<CellKey, std::string>> rows;
  std::map<std::pair<CellKey, std::string>,
           std::vector<std::pair<const RunRecord*, const RunRecord*>>>
      pairs;
  for (const RunRecord& r : records) {
    if (!DefragPolicyBudget(r.policy)) continue;
    auto base = plain.find({r.fleet, r.workload, r.protocol, r.seed});
    if (base == plain.end()) continue;
    const auto row = std::make_pair(CellKey{r.fleet, r.workload, r.protocol}, r.policy);
    if (!pairs.contains(row)) rows.push_back(row);
    pairs[row].emplace_back(base->second, &r);
  }
  if (rows.empty()) return "";
  const double hours_per_lifetime = mean_lifetime_minutes / 60.0;
  std::string out =
      "| fleet | workload | protocol | budget (evictions/h) | evictions/h | admitted by defrag/h | "
      "demand served % (no defrag) | Δ demand served (points) | mean wait, min (no defrag) | "
      "Δ mean wait, min | p95 wait, min (no defrag) | Δ p95 wait, min | slice-hours served "
      "gained per eviction |\n"
      "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& row : rows) {
    const auto& [cell, policy] = row;
    std::vector<double> served_a;
    std::vector<double> served_b;
    std::vector<double> mean_a;
    std::vector<double> mean_b;
    std::vector<double> p95_a;
    std::vector<double> p95_b;
    double evictions = 0;
    double admitted = 0;
    double hours = 0;
    double slice_hours_gained = 0;
    for (const auto& [a, b] : pairs[row]) {
      served_a.push_back(100 * a->metrics.served_ratio);
      served_b.push_back(100 * b->metrics.served_ratio);
      mean_a.push_back(a->metrics.mean_wait() * mean_lifetime_minutes);
      mean_b.push_back(b->metrics.mean_wait() * mean_lifetime_minutes);
      p95_a.push_back(WaitP95(a->metrics) * mean_lifetime_minutes);
      p95_b.push_back(WaitP95(b->metrics) * mean_lifetime_minutes);
      const DefragCounts& d = b->metrics.defrag;
      evictions += static_cast<double>(d.evictions);
      admitted += static_cast<double>(d.admitted);
      const double run_hours = d.measured_time * hours_per_lifetime;
      hours += run_hours;
      slice_hours_gained += (b->metrics.served_ratio - a->metrics.served_ratio) *
                            static_cast<double>(d.total_slices) * run_hours;
    }
    const auto mean_of = [](const std::vector<double>& v) { return SampleMeanStd(v).mean; };
    const std::string per_eviction =
        evictions > 0 ? FormatFixed(slice_hours_gained / evictions, 2) : "–";
    out += "| " + std::get<0>(cell) + " | " + std::get<1>(cell) + " | " + std::get<2>(cell) +
           " | " + std::to_string(*DefragPolicyBudget(policy)) + " | " +
           FormatFixed(hours > 0 ? evictions / hours : 0, 1) + " | " +
           FormatFixed(hours > 0 ? admitted / hours : 0, 1) + " | " +
           FormatFixed(mean_of(served_a), 1) + " | " +
           FormatPairedDifference(PairedMeanDifference(served_a, served_b)) + " | " +
           FormatFixed(mean_of(mean_a), 1) + " | " +
           FormatPairedDifference(PairedMeanDifference(mean_a, mean_b)) + " | " +
           FormatFixed(mean_of(p95_a), 1) + " | " +
           FormatPairedDifference(PairedMeanDifference(p95_a, p95_b)) + " | " + per_eviction +
           " |\n";
  }
  return out;
}

Result<std::unique_ptr<Defragmenter>> MakeTesseraDefragmenter(MigCluster& cluster) {
  auto requests = ResolveTesseraRequests(cluster);
  if (!requests.ok()) return requests.error();
  return std::unique_ptr<Defragmenter>(
      std::make_unique<TesseraDefragmenter>(cluster, std::move(requests.value())));
}

}  // namespace tessera::sim::mig_replay
