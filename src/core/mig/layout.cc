#include "core/mig/layout.h"

#include <algorithm>
#include <bit>
#include <tuple>

#include "core/mig/layout_table.h"

namespace tessera::mig {

uint32_t PlacementMask(const model::Placement& p) {
  if (p.size >= 32) return ~0U << p.start;
  return ((1U << p.size) - 1U) << p.start;
}

GpuMigModel::GpuMigModel(const model::GpuDevice& device,
                         const std::vector<std::string>* allowlist) {
  for (const auto& p : device.mig_profiles) {
    if (static_cast<int>(profiles_.size()) >= kMaxProfiles) break;
    // Placements past the 32-slice mask cannot be tracked; they are dropped, never misplaced.
    model::MigProfile copy = p;
    copy.placements.erase(
        std::remove_if(copy.placements.begin(), copy.placements.end(),
                       [](const model::Placement& pl) { return pl.size == 0 || pl.end() > 32; }),
        copy.placements.end());
    bool allowed = allowlist == nullptr ||
                   std::find(allowlist->begin(), allowlist->end(), p.name) != allowlist->end();
    profiles_.push_back(std::move(copy));
    allowed_.push_back(allowed);
  }
  for (const auto& p : profiles_) {
    // Search order: higher starts first (HAMi 2.10 takes 1g from the top).
    std::vector<model::Placement> high_first = p.placements;
    std::stable_sort(
        high_first.begin(), high_first.end(),
        [](const model::Placement& a, const model::Placement& b) { return a.start > b.start; });
    placements_high_first_.push_back(std::move(high_first));
    media_.push_back(p.media());
    max_count_.push_back(p.EffectiveMaxCount());
    std::vector<uint32_t> masks;
    masks.reserve(p.placements.size());
    for (const auto& pl : p.placements) masks.push_back(PlacementMask(pl));
    placement_masks_.push_back(std::move(masks));
    for (const auto& pl : p.placements) memory_slices_ = std::max(memory_slices_, pl.end());
    compute_slices_ = std::max(compute_slices_, p.slice_count);
  }
  uint32_t widest = 0;
  for (const auto& p : profiles_) {
    if (p.placements.empty() || p.placements.front().size <= widest) continue;
    widest = p.placements.front().size;
    slice_gib_ = static_cast<double>(p.memory_mib) / widest / 1024.0;
  }
}

int GpuMigModel::ProfileIndex(std::string_view name) const {
  for (size_t i = 0; i < profiles_.size(); ++i) {
    if (profiles_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int32_t GpuMigModel::LargestProfileMemory() const {
  int32_t best = 0;
  for (size_t i = 0; i < profiles_.size(); ++i) {
    if (allowed_[i]) best = std::max(best, profiles_[i].memory_mib);
  }
  return best;
}

bool GpuMigModel::CanPlace(const Layout& layout, int profile,
                           const model::Placement& placement) const {
  if (profile < 0 || profile >= static_cast<int>(profiles_.size())) return false;
  const auto& p = profiles_[profile];
  if (std::find(p.placements.begin(), p.placements.end(), placement) == p.placements.end()) {
    return false;
  }
  if ((layout.occupied & PlacementMask(placement)) != 0) return false;
  if (layout.counts[profile] >= max_count_[profile]) return false;
  // No separate compute-slice check: on every GPU in the MIG tables, non-overlapping placements
  // never use more compute slices than the GPU has (mig-hardware.md rule R9), and a node that
  // registers only some profiles does not tell us the GPU's compute-slice count anyway.
  switch (media_[profile]) {
    case model::MediaEngines::kShared:
      if (layout.media_shared > 0 || layout.media_all > 0) return false;
      break;
    case model::MediaEngines::kAll:
      // +me.all takes every media engine: only -me instances may coexist (rule R5).
      if (layout.with_media > 0) return false;
      break;
    case model::MediaEngines::kDefault:
      if (layout.media_all > 0) return false;
      break;
    case model::MediaEngines::kNone:
      break;
  }
  return true;
}

void GpuMigModel::Place(Layout& layout, int profile, const model::Placement& placement) const {
  const auto& p = profiles_[profile];
  const model::MediaEngines media = media_[profile];
  layout.occupied |= PlacementMask(placement);
  layout.counts[profile]++;
  layout.compute_used += p.slice_count;
  if (media == model::MediaEngines::kShared) layout.media_shared++;
  if (media == model::MediaEngines::kAll) layout.media_all++;
  if (media != model::MediaEngines::kNone) layout.with_media++;
}

void GpuMigModel::Remove(Layout& layout, int profile, const model::Placement& placement) const {
  const auto& p = profiles_[profile];
  const model::MediaEngines media = media_[profile];
  layout.occupied &= ~PlacementMask(placement);
  if (layout.counts[profile] > 0) layout.counts[profile]--;
  layout.compute_used -= std::min(layout.compute_used, p.slice_count);
  if (media == model::MediaEngines::kShared && layout.media_shared > 0) layout.media_shared--;
  if (media == model::MediaEngines::kAll && layout.media_all > 0) layout.media_all--;
  if (media != model::MediaEngines::kNone && layout.with_media > 0) layout.with_media--;
}

std::vector<int> GpuMigModel::EligibleProfiles(const InstanceDemand& demand) const {
  std::vector<int> out;
  for (size_t i = 0; i < profiles_.size(); ++i) {
    const auto& p = profiles_[i];
    if (!allowed_[i] || p.placements.empty()) continue;
    if (p.memory_mib < demand.mem_mib) continue;
    if (demand.cores > 0 && p.core < demand.cores) continue;
    out.push_back(static_cast<int>(i));
  }
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
    const auto& pa = profiles_[a];
    const auto& pb = profiles_[b];
    return std::tie(pa.memory_mib, pa.slice_count, pa.name) <
           std::tie(pb.memory_mib, pb.slice_count, pb.name);
  });
  return out;
}

uint32_t GpuMigModel::LargestFreeRun(const Layout& layout) const {
  uint32_t best = 0;
  uint32_t run = 0;
  for (uint32_t i = 0; i < memory_slices_; ++i) {
    if ((layout.occupied >> i) & 1U) {
      run = 0;
    } else {
      best = std::max(best, ++run);
    }
  }
  return best;
}

ProfileRoom GpuMigModel::Room(const Layout& layout) const {
  if (table_ != nullptr) {
    if (const ProfileRoom* room = table_->Find(layout)) return *room;
  }
  return ComputeRoom(layout);
}

namespace {

// The most instances of one profile that fit on top of `layout`, trying every placement.
int MaxMore(const GpuMigModel& model, Layout& layout, int profile) {
  int best = 0;
  for (const auto& pl : model.profiles()[profile].placements) {
    if (!model.CanPlace(layout, profile, pl)) continue;
    model.Place(layout, profile, pl);
    best = std::max(best, 1 + MaxMore(model, layout, profile));
    model.Remove(layout, profile, pl);
    if (best >= static_cast<int>(model.profiles()[profile].placements.size())) break;
  }
  return best;
}

}  // namespace

ProfileRoom GpuMigModel::ComputeRoom(const Layout& layout) const {
  ProfileRoom room{};
  Layout work = layout;
  for (size_t p = 0; p < profiles_.size(); ++p) {
    room[p] = static_cast<uint8_t>(MaxMore(*this, work, static_cast<int>(p)));
  }
  return room;
}

std::string GpuMigModel::RulesKey() const {
  std::string key;
  for (size_t p = 0; p < profiles_.size(); ++p) {
    const auto& pr = profiles_[p];
    // Memory and core share too: they decide which profile a request maps to, so models that
    // share a layout table also share demand weights and cached arrangements.
    key += pr.name + (allowed_[p] ? "+" : "-") + std::to_string(pr.slice_count) + "/" +
           std::to_string(max_count_[p]) + "/" + std::to_string(pr.memory_mib) + "/" +
           std::to_string(pr.core) + ":";
    for (const auto& pl : pr.placements) {
      key += std::to_string(pl.start) + "," + std::to_string(pl.size) + ";";
    }
    key += "|";
  }
  return key;
}

void GpuMigModel::Assess(const Layout& layout, const std::vector<double>& profile_weights,
                         double* placeability, int32_t* largest,
                         const StrandedValue& stranded) const {
  const ProfileRoom room = Room(layout);
  double value = 0;
  const size_t n = std::min(profile_weights.size(), profiles_.size());
  for (size_t p = 0; p < n; ++p) value += profile_weights[p] * room[p];
  // Room counts each profile on its own, so two layouts can keep the same room while one has a
  // free slice nothing in the mix can cover (an A100-40GB 1g at slice 6 leaves slice 7 to the
  // 3g at 4-7 it just blocked): that memory is lost until an instance leaves.
  if (n > 0) {
    const StrandedCounts counts = StrandedGiven(layout, profile_weights, room);
    value -= (stranded.memory < 0 ? slice_gib_ : stranded.memory) * counts.memory +
             stranded.idle_compute * counts.idle_compute;
  }
  int32_t best = 0;
  for (size_t p = 0; p < profiles_.size(); ++p) {
    if (allowed_[p] && room[p] > 0) best = std::max(best, profiles_[p].memory_mib);
  }
  *placeability = value;
  *largest = best;
}

double GpuMigModel::Placeability(const Layout& layout, const std::vector<double>& profile_weights,
                                 const StrandedValue& stranded) const {
  double value = 0;
  int32_t largest = 0;
  Assess(layout, profile_weights, &value, &largest, stranded);
  return value;
}

StrandedCounts GpuMigModel::Stranded(const Layout& layout,
                                     const std::vector<double>& profile_weights) const {
  return StrandedGiven(layout, profile_weights, Room(layout));
}

StrandedCounts GpuMigModel::StrandedGiven(const Layout& layout,
                                          const std::vector<double>& profile_weights,
                                          const ProfileRoom& room) const {
  // A profile with room passes its count and media rules (they do not depend on the placement),
  // so its legal placements are exactly those clear of the occupied slices.
  uint32_t usable = 0;
  const size_t n = std::min(profile_weights.size(), profiles_.size());
  for (size_t p = 0; p < n; ++p) {
    if (!(profile_weights[p] > 0) || !allowed_[p] || room[p] == 0) continue;
    for (const uint32_t mask : placement_masks_[p]) {
      if ((layout.occupied & mask) == 0) usable |= mask;
    }
  }
  const uint32_t all = memory_slices_ >= 32 ? ~0U : (1U << memory_slices_) - 1;
  return CountStranded(static_cast<uint32_t>(std::popcount(all & ~layout.occupied & ~usable)),
                       compute_slices_ - std::min(compute_slices_, layout.compute_used),
                       static_cast<uint32_t>(std::popcount(usable)));
}

int32_t GpuMigModel::LargestPlaceable(const Layout& layout) const {
  static const std::vector<double> kNoWeights;
  double value = 0;
  int32_t largest = 0;
  Assess(layout, kNoWeights, &value, &largest);
  return largest;
}

namespace {

struct Option {
  int profile;
  model::Placement placement;
};

// Placeability values are sums of weights times small integers: differences below this are
// rounding, not a better layout.
constexpr double kPlaceabilityEpsilon = 1e-9;

struct Objective {
  uint32_t free_run = 0;
  uint32_t compute = 0;
  long long memory = 0;
  double placeability = 0;
  int32_t largest = 0;

  // Without a goal: larger free block first, then fewer compute slices, then less memory.
  bool BetterThan(const Objective& o) const {
    if (free_run != o.free_run) return free_run > o.free_run;
    if (compute != o.compute) return compute < o.compute;
    return memory < o.memory;
  }
  // With a goal: (less memory,) more placeability, larger placeable profile, fewer compute
  // slices, less memory.
  bool BetterThan(const Objective& o, const ArrangeGoal& goal) const {
    if (!goal.allow_larger_profiles && memory != o.memory) return memory < o.memory;
    if (placeability > o.placeability + kPlaceabilityEpsilon) return true;
    if (placeability < o.placeability - kPlaceabilityEpsilon) return false;
    if (largest != o.largest) return largest > o.largest;
    if (compute != o.compute) return compute < o.compute;
    return memory < o.memory;
  }
};

class ArrangeSearch {
 public:
  ArrangeSearch(const GpuMigModel& model, const std::vector<std::vector<Option>>& options,
                const std::vector<int>& same_as_previous, const ArrangeGoal* goal)
      : model_(model), options_(options), same_as_previous_(same_as_previous), goal_(goal) {}

  bool Run(const Layout& base) {
    chosen_.assign(options_.size(), -1);
    // The least memory the demands from i on can take: with the smallest profiles required,
    // a branch that cannot get down to the best memory found is not searched.
    min_rest_.assign(options_.size() + 1, 0);
    for (size_t i = options_.size(); i-- > 0;) {
      long long least = -1;
      for (const Option& o : options_[i]) {
        const long long m = model_.profiles()[o.profile].memory_mib;
        if (least < 0 || m < least) least = m;
      }
      min_rest_[i] = min_rest_[i + 1] + std::max(0LL, least);
    }
    Layout layout = base;
    Visit(0, layout, 0);
    return found_;
  }
  const std::vector<int>& best() const { return best_; }
  const Objective& best_objective() const { return best_objective_; }

 private:
  static constexpr long kBudget = 2'000'000;

  void Visit(size_t i, Layout& layout, long long memory) {
    if (++visited_ > kBudget && found_) return;
    if (i == options_.size()) {
      Objective o{model_.LargestFreeRun(layout), layout.compute_used, memory, 0, 0};
      if (goal_ != nullptr)
        model_.Assess(layout, *goal_->profile_weights, &o.placeability, &o.largest,
                      goal_->stranded);
      const bool better =
          goal_ != nullptr ? o.BetterThan(best_objective_, *goal_) : o.BetterThan(best_objective_);
      if (!found_ || better) {
        found_ = true;
        best_objective_ = o;
        best_ = chosen_;
      }
      return;
    }
    // Placing more never grows the free block: prune branches that cannot beat the best.
    if (goal_ == nullptr && found_ && model_.LargestFreeRun(layout) < best_objective_.free_run) {
      return;
    }
    size_t first = same_as_previous_[i] ? static_cast<size_t>(chosen_[i - 1]) + 1 : 0;
    const bool memory_first = goal_ != nullptr && !goal_->allow_larger_profiles;
    for (size_t k = first; k < options_[i].size(); ++k) {
      const Option& opt = options_[i][k];
      if (memory_first && found_ &&
          memory + model_.profiles()[opt.profile].memory_mib + min_rest_[i + 1] >
              best_objective_.memory) {
        continue;
      }
      if (!model_.CanPlace(layout, opt.profile, opt.placement)) continue;
      model_.Place(layout, opt.profile, opt.placement);
      chosen_[i] = static_cast<int>(k);
      Visit(i + 1, layout, memory + model_.profiles()[opt.profile].memory_mib);
      model_.Remove(layout, opt.profile, opt.placement);
    }
  }

  const GpuMigModel& model_;
  const std::vector<std::vector<Option>>& options_;
  const std::vector<int>& same_as_previous_;
  const ArrangeGoal* goal_;
  std::vector<int> chosen_;
  std::vector<long long> min_rest_;
  std::vector<int> best_;
  Objective best_objective_;
  bool found_ = false;
  long visited_ = 0;
};

}  // namespace

std::optional<std::vector<InstanceChoice>> GpuMigModel::Arrange(
    const Layout& base, const std::vector<InstanceDemand>& demands) const {
  return ArrangeWith(base, demands, nullptr, nullptr);
}

std::optional<std::vector<InstanceChoice>> GpuMigModel::Arrange(
    const Layout& base, const std::vector<InstanceDemand>& demands, const ArrangeGoal& goal,
    ArrangeScore* score) const {
  return ArrangeWith(base, demands, goal.profile_weights != nullptr ? &goal : nullptr, score);
}

std::optional<std::vector<InstanceChoice>> GpuMigModel::ArrangeWith(
    const Layout& base, const std::vector<InstanceDemand>& demands, const ArrangeGoal* goal,
    ArrangeScore* score) const {
  if (demands.empty()) {
    if (score != nullptr) {
      static const std::vector<double> kNoWeights;
      *score = ArrangeScore{0, 0, 0, base.compute_used};
      Assess(base, goal != nullptr ? *goal->profile_weights : kNoWeights, &score->placeability,
             &score->largest, goal != nullptr ? goal->stranded : StrandedValue{});
    }
    return std::vector<InstanceChoice>{};
  }
  // Search the most constrained demands first; identical demands are searched in increasing
  // option order so that permutations of the same set are visited once.
  std::vector<size_t> order(demands.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](size_t i) { return std::make_pair(-demands[i].mem_mib, -demands[i].cores); };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });

  std::vector<std::vector<Option>> options(order.size());
  std::vector<int> same(order.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) {
    const InstanceDemand& d = demands[order[i]];
    if (i > 0 && demands[order[i - 1]] == d) {
      options[i] = options[i - 1];
      same[i] = 1;
      continue;
    }
    for (int p : EligibleProfiles(d)) {
      for (const auto& pl : placements_high_first_[p]) options[i].push_back(Option{p, pl});
    }
    if (options[i].empty()) return std::nullopt;
  }
  ArrangeSearch search(*this, options, same, goal);
  if (!search.Run(base)) return std::nullopt;
  std::vector<InstanceChoice> out(demands.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const Option& opt = options[i][search.best()[i]];
    out[order[i]] = InstanceChoice{opt.profile, opt.placement};
  }
  if (score != nullptr) {
    const Objective& o = search.best_objective();
    *score = ArrangeScore{o.memory, o.placeability, o.largest, o.compute};
  }
  return out;
}

}  // namespace tessera::mig
