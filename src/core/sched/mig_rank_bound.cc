#include "core/sched/mig_rank_bound.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <span>
#include <type_traits>

#include "core/sched/fit.h"

namespace tessera::sched {
namespace {

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
constexpr double kNoStep = std::numeric_limits<double>::infinity();
constexpr int64_t kNoMemory = std::numeric_limits<int64_t>::max();

// Differences of placeability below this are rounding (GpuMigModel::Arrange's epsilon).
constexpr double kNoise = 1e-9;

// Among spreads of the least memory: keeps the least drop, and the most cores of the spreads
// within rounding of it.
void KeepLeastDrop(double drop, int64_t cores, double* best, int64_t* best_cores) {
  if (drop < *best - kNoise) {
    *best = drop;
    *best_cores = cores;
  } else if (drop <= *best + kNoise) {
    *best_cores = std::max(*best_cores, cores);
    *best = std::min(*best, drop);
  }
}

// std::round, inline (the library call was a tenth of the bound's time): exact for the
// integers a double holds, which buckets are.
double RoundHalfAway(double x) {
  constexpr double kAllIntegers = 4503599627370496.0;  // 2^52: from here on x is an integer
  if (!(std::fabs(x) < kAllIntegers)) return x;
  const auto whole = static_cast<double>(static_cast<int64_t>(x));  // toward zero
  const double fraction = x - whole;                                // exact
  if (fraction >= 0.5) return whole + 1;
  if (fraction <= -0.5) return whole - 1;
  return whole;
}

}  // namespace

MigRankBound::MigRankBound(const PodRequest& request, const MigGoal& goal) {
  if (goal.weights == nullptr || !goal.admits_open_mig_gpus) return;
  // The plan places every instance of every container (PlanSearch).
  for (const ContainerRequest& k : request.slots) {
    if (k.nums <= 0) continue;
    containers_.push_back(Instances{k.mem_mib, k.mem_percent, k.cores, k.nums});
    instances_ += k.nums;
  }
  if (instances_ == 0 || instances_ > kMaxInstances) return;
  larger_profiles_ = goal.allow_larger_profiles;
  alike_ = std::all_of(containers_.begin(), containers_.end(), [&](const Instances& k) {
    const Instances& first = containers_.front();
    return k.mem_mib == first.mem_mib && k.mem_percent == first.mem_percent &&
           k.cores == first.cores;
  });
  weights_ = goal.weights;
}

void MigRankBound::Prepare(const mig::GpuMigModel& model, Rules* rules) const {
  const mig::LayoutTable* table = model.table();
  if (table == nullptr || !table->complete()) return;
  rules->weights = &weights_->For(model);
  const std::vector<double>& w = *rules->weights;
  if (std::any_of(w.begin(), w.end(), [](double x) { return !(x >= 0); })) return;
  rules->stranded = weights_->Stranded(model);
  if (rules->stranded.memory < 0) rules->stranded.memory = model.SliceGib();
  rules->compute_slices = model.compute_slices();
  const uint32_t slices = model.memory_slices();
  rules->all_slices = slices >= 32 ? ~0U : (1U << slices) - 1;
  const auto& profiles = model.profiles();
  for (size_t p = 0; p < std::min(w.size(), profiles.size()); ++p) {
    if (model.Allowed(static_cast<int>(p)) && w[p] > 0) rules->positive |= 1U << p;
  }
  for (size_t p = 0; p < std::min<size_t>(profiles.size(), mig::kMaxProfiles); ++p) {
    if (model.Allowed(static_cast<int>(p))) rules->allowed |= 1U << p;
  }
  for (size_t p = 0; p < std::min(profiles.size(), rules->memory.size()); ++p) {
    rules->memory[p] = profiles[p].memory_mib;
    rules->cores[p] = profiles[p].core;
  }
  for (const Instances& k : containers_) {
    int32_t mem = k.mem_mib;
    if (mem == 0) {
      mem = static_cast<int32_t>(static_cast<int64_t>(model.LargestProfileMemory()) *
                                 k.mem_percent / 100);
    }
    int64_t most_mem = 0;
    int64_t most_cores = 0;
    for (int p : model.EligibleProfiles(mig::InstanceDemand{mem, k.cores})) {
      rules->eligible |= 1U << p;
      most_mem = std::max<int64_t>(most_mem, profiles[p].memory_mib);
      most_cores = std::max<int64_t>(most_cores, profiles[p].core);
    }
    rules->most_mem += most_mem * k.count;
    rules->most_cores += most_cores * k.count;
  }
  rules->placeability.assign(table->size(), kUnknown);
  for (int32_t j = 0; j < instances_; ++j) {
    rules->reach[j].assign(table->size(), Reach{kUnknown, 0, Kept{}});
  }
  rules->terms.assign(table->size() * static_cast<size_t>(instances_),
                      Term{kUnknown, kUnknown, 0, 0});
  rules->table = table;
}

MigRankBound::Rules& MigRankBound::FindRules(const void* identity,
                                             const mig::GpuMigModel& model) const {
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (rules_[i].identity == identity) {
      last_ = i;
      return rules_[i];
    }
  }
  last_ = rules_.size();
  Rules& rules = rules_.emplace_back();
  rules.identity = identity;
  Prepare(model, &rules);
  return rules;
}

double MigRankBound::Placeability(Rules& rules, uint32_t state) const {
  double& value = rules.placeability[state];
  if (!std::isnan(value)) return value;
  const mig::ProfileRoom& room = rules.table->RoomAt(static_cast<int32_t>(state));
  const std::vector<double>& w = *rules.weights;
  double sum = 0;
  for (size_t p = 0; p < std::min(w.size(), room.size()); ++p) sum += w[p] * room[p];
  const uint32_t occupied = rules.table->states()[state].occupied;
  uint32_t coverable = 0;  // free slices a profile of positive weight can still take
  for (const mig::LayoutTable::Step& step : rules.table->Steps(static_cast<int32_t>(state))) {
    if (((rules.positive >> step.profile) & 1U) != 0) {
      coverable |= rules.table->states()[step.next].occupied & ~occupied;
    }
  }
  // As GpuMigModel::Assess adds it up.
  const uint32_t compute_used = rules.table->states()[state].compute_used;
  const mig::StrandedCounts stranded = mig::CountStranded(
      static_cast<uint32_t>(std::popcount(rules.all_slices & ~occupied & ~coverable)),
      rules.compute_slices - std::min(rules.compute_slices, compute_used),
      static_cast<uint32_t>(std::popcount(coverable)));
  sum -=
      rules.stranded.memory * stranded.memory + rules.stranded.idle_compute * stranded.idle_compute;
  value = sum;
  return value;
}

const MigRankBound::Reach& MigRankBound::ReachOf(Rules& rules, uint32_t state,
                                                 int32_t instances) const {
  Reach& reach = rules.reach[instances - 1][state];
  if (!std::isnan(reach.most_left)) return reach;
  const std::span<const mig::LayoutTable::Step> steps =
      rules.table->Steps(static_cast<int32_t>(state));
  reach = Reach{-kNoStep, std::numeric_limits<int32_t>::max(), Kept{-kNoStep, 0, 0, 0}};
  const std::vector<mig::Layout>& states = rules.table->states();
  for (const mig::LayoutTable::Step& step : steps) {
    if (((rules.eligible >> step.profile) & 1U) == 0) continue;
    double most_left = 0;
    int32_t memory = rules.memory[step.profile];
    Kept kept{0, 0, 0, rules.cores[step.profile]};
    if (instances == 1) {
      most_left = Placeability(rules, step.next);
      kept.left = most_left;
      kept.largest = LargestPlaceable(rules, step.next);
      kept.compute = states[step.next].compute_used;
    } else {
      const Reach& rest = ReachOf(rules, step.next, instances - 1);
      if (rest.most_left == -kNoStep) continue;
      most_left = rest.most_left;
      memory += rest.least_memory;
      kept.left = rest.kept.left;
      kept.largest = rest.kept.largest;
      kept.compute = rest.kept.compute;
      kept.cores += rest.kept.cores;
    }
    reach.most_left = std::max(reach.most_left, most_left);
    if (memory < reach.least_memory) {
      reach.least_memory = memory;
      reach.kept = kept;
    } else if (memory == reach.least_memory) {
      KeepArrangement(kept, &reach.kept);
    }
  }
  return reach;
}

void MigRankBound::KeepArrangement(const Kept& way, Kept* kept) {
  // GpuMigModel::Arrange's order among the least memory: more placeability, a larger placeable
  // profile, fewer compute slices; what it leaves tied counts its most cores.
  if (way.left > kept->left + kNoise) {
    *kept = way;
    return;
  }
  if (way.left < kept->left - kNoise) return;
  if (way.largest != kept->largest) {
    if (way.largest > kept->largest) *kept = way;
    return;
  }
  if (way.compute != kept->compute) {
    if (way.compute < kept->compute) *kept = way;
    return;
  }
  kept->cores = std::max(kept->cores, way.cores);
  kept->left = std::max(kept->left, way.left);
}

int32_t MigRankBound::LargestPlaceable(const Rules& rules, uint32_t state) const {
  const mig::ProfileRoom& room = rules.table->RoomAt(static_cast<int32_t>(state));
  int32_t largest = 0;
  for (size_t p = 0; p < rules.memory.size(); ++p) {
    if (((rules.allowed >> p) & 1U) != 0 && room[p] > 0)
      largest = std::max(largest, rules.memory[p]);
  }
  return largest;
}

void MigRankBound::FillTerms(Rules& rules, uint32_t state, Term* terms) const {
  const double before = Placeability(rules, state);
  for (int32_t j = 1; j <= instances_; ++j) {
    const Reach& reach = ReachOf(rules, state, j);
    Term& term = terms[j - 1];
    if (reach.most_left == -kNoStep) {
      term = Term{kNoStep, kNoStep, 0, 0};
    } else {
      term = Term{before - reach.most_left, before - reach.kept.left, reach.least_memory,
                  reach.kept.cores};
    }
  }
}

template <typename F>
decltype(auto) MigRankBound::WithInstanceCount(F&& f) const {
  static_assert(kMaxInstances == 4);
  switch (instances_) {
    case 1:
      return f(std::integral_constant<int32_t, 1>{});
    case 2:
      return f(std::integral_constant<int32_t, 2>{});
    case 3:
      return f(std::integral_constant<int32_t, 3>{});
    default:
      return f(std::integral_constant<int32_t, 4>{});
  }
}

std::optional<MigRankBound::NodeBound> MigRankBound::Bound(const state::NodeState& node,
                                                           double beat) const {
  if (!enabled() || !node.all_mig || !node.summaries_current ||
      node.gpu_summaries.size() != node.mig_models.size()) {
    return std::nullopt;
  }
  // Without larger profiles the plan takes the least memory (its first criterion), and when
  // every instance asks the same the spreads below find it — if the plan searched every spread
  // (its budget is far above this many tries).
  constexpr int64_t kExhaustive = 20000;
  int64_t open_gpus = 0;
  for (const state::GpuSummary& gpu : node.gpu_summaries) open_gpus += gpu.open ? 1 : 0;
  int64_t tries = 1;
  for (int32_t i = 0; i < instances_ && tries <= kExhaustive; ++i) tries *= open_gpus;
  const bool least_memory = !larger_profiles_ && alike_ && tries <= kExhaustive;
  // The plan's drop is summed in another order: a margin far above that rounding, far below a
  // quantum.
  constexpr double kMargin = 1e-9;
  // Nodes side by side are often alike (a pool): the same GPUs in the same layouts give the
  // same spreads.
  // (Only least-memory spreads are remembered.)
  if (!least_memory || !SameGpusAsLast(node)) {
    // The GPUs' terms are looked up first, so that their loads overlap.
    gpu_terms_.clear();
    for (size_t dev = 0; dev < node.gpu_summaries.size(); ++dev) {
      const state::GpuSummary& gpu = node.gpu_summaries[dev];
      if (!gpu.open) continue;
      if (gpu.rules == nullptr || gpu.layout_id < 0) return std::nullopt;
      Rules& rules = RulesOf(gpu.rules, node.mig_models[dev]);
      if (rules.table == nullptr) return std::nullopt;
      gpu_terms_.push_back(TermsOf(rules, static_cast<uint32_t>(gpu.layout_id)));
    }
    // The least sum of GPU floors over every spread (a knapsack over GPUs, branch-free). Where
    // the plan takes the least memory, its drop is one of the spreads' sums of least-memory
    // floors, so the least of those is a floor too: most nodes rank after `beat` by it alone.
    const double least = WithInstanceCount(
        [&](auto k) { return LeastSum<decltype(k)::value>(gpu_terms_, least_memory); });
    if (least == kNoStep) return NodeBound{kNoStep, 0};  // no spread at all
    const double lowest = RoundHalfAway((least - kMargin) / kPlaceabilityQuantum);
    if (!least_memory || lowest > beat) {
      // The score is worked out only where the bucket can tie.
      return NodeBound{lowest, least_memory ? 0 : LooseScore(node)};
    }
    // Among the spreads of the least memory: the least sum of their GPU floors and the most
    // cores (the knapsack again, over the memory first).
    Spreads spread{};
    spread[0] = Spread{0, 0, 0};
    WithInstanceCount([&](auto k) { AddLeastMemory<decltype(k)::value>(gpu_terms_, &spread); });
    last_spread_ = spread[instances_];
    last_known_ = true;
    last_gpus_.clear();
    for (const state::GpuSummary& gpu : node.gpu_summaries) {
      last_gpus_.emplace_back(gpu.open ? gpu.rules : nullptr, gpu.layout_id);
    }
  }
  const Spread& all = last_spread_;
  if (all.memory == kNoMemory) return NodeBound{kNoStep, 0};
  return NodeBound{RoundHalfAway((all.least_memory_drop - kMargin) / kPlaceabilityQuantum),
                   NodeScoreAdding(node, instances_, all.cores, all.memory)};
}

template <int32_t kInstances>
double MigRankBound::LeastSum(std::span<const Term* const> gpus, bool least_memory) {
  // least[c]: the least sum over spreads of c instances on the GPUs so far; a GPU without
  // room for j instances has the floor infinity, which the sums carry.
  std::array<double, kInstances + 1> least;
  least.fill(kNoStep);
  least[0] = 0;
  for (const Term* terms : gpus) {
    for (int32_t c = kInstances; c >= 1; --c) {
      for (int32_t j = 1; j <= c; ++j) {
        const double floor = least_memory ? terms[j - 1].least_memory : terms[j - 1].any;
        least[c] = std::min(least[c], least[c - j] + floor);
      }
    }
  }
  return least[kInstances];
}

template <int32_t kInstances>
void MigRankBound::AddLeastMemory(std::span<const Term* const> gpus, Spreads* spread) {
  for (const Term* terms : gpus) {
    for (int32_t c = kInstances; c >= 1; --c) {
      Spread& into = (*spread)[c];
      for (int32_t j = 1; j <= c; ++j) {
        const Spread& rest = (*spread)[c - j];
        if (rest.memory == kNoMemory) continue;
        const Term& term = terms[j - 1];
        if (term.any == kNoStep) break;  // no room for j instances, nor for more
        const int64_t memory = rest.memory + term.memory;
        const double drop = rest.least_memory_drop + term.least_memory;
        const int64_t cores = rest.cores + term.cores;
        if (memory < into.memory) {
          into.memory = memory;
          into.least_memory_drop = drop;
          into.cores = cores;
        } else if (memory == into.memory) {
          KeepLeastDrop(drop, cores, &into.least_memory_drop, &into.cores);
        }
      }
    }
  }
}

bool MigRankBound::SameGpusAsLast(const state::NodeState& node) const {
  if (!last_known_ || last_gpus_.size() != node.gpu_summaries.size()) return false;
  for (size_t dev = 0; dev < last_gpus_.size(); ++dev) {
    const state::GpuSummary& gpu = node.gpu_summaries[dev];
    if (last_gpus_[dev].first != (gpu.open ? gpu.rules : nullptr)) return false;
    if (gpu.open && last_gpus_[dev].second != gpu.layout_id) return false;
  }
  return true;
}

float MigRankBound::LooseScore(const state::NodeState& node) const {
  // Each instance lands on a GPU of one of the node's rules: the sum over its rules covers it.
  constexpr size_t kFew = 4;
  const void* seen[kFew] = {};
  size_t count = 0;
  int64_t mem = 0;
  int64_t cores = 0;
  for (size_t dev = 0; dev < node.gpu_summaries.size(); ++dev) {
    const state::GpuSummary& gpu = node.gpu_summaries[dev];
    if (!gpu.open) continue;
    if (std::find(seen, seen + count, gpu.rules) != seen + count) continue;
    const Rules& rules = RulesOf(gpu.rules, node.mig_models[dev]);
    mem += rules.most_mem;
    cores += rules.most_cores;
    if (count < kFew) {
      seen[count++] = gpu.rules;
    } else {
      // More rules than remembered: count every GPU's (still a ceiling).
      seen[kFew - 1] = gpu.rules;
    }
  }
  return NodeScoreAdding(node, instances_, cores, mem);
}

}  // namespace tessera::sched
