#include "core/sched/mig_demand.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/common/strings.h"

namespace tessera::sched {

MigDemandKey MigDemandOf(const ContainerRequest& request) {
  MigDemandKey key;
  key.mem_mib = request.mem_mib;
  key.mem_percent = request.mem_mib > 0 ? 0 : request.mem_percent;
  key.cores = request.cores;
  return key;
}

void MigDemandMix::Observe(const MigDemandKey& key, double weight) {
  if (weight <= 0) return;
  // Decay everything by growing the scale new observations are stored at.
  scale_ /= decay_;
  counts_[key] += weight * scale_;
  total_ += weight * scale_;
  if (counts_.size() > max_kinds_) {
    // Forget the rarest kind (deterministic: the first in key order among equal counts).
    auto rarest = counts_.begin();
    for (auto it = counts_.begin(); it != counts_.end(); ++it) {
      if (it->second < rarest->second) rarest = it;
    }
    total_ -= rarest->second;
    counts_.erase(rarest);
  }
  if (scale_ > 1e100) {  // renormalise long before overflow
    for (auto& [k, c] : counts_) c /= scale_;
    total_ /= scale_;
    scale_ = 1.0;
  }
  ++version_;
}

std::vector<std::pair<MigDemandKey, double>> MigDemandMix::Entries() const {
  std::vector<std::pair<MigDemandKey, double>> out;
  out.reserve(counts_.size());
  for (const auto& [k, c] : counts_) out.emplace_back(k, c / scale_);
  return out;
}

Result<MigPrior> ParseMigPrior(const std::string& text, double strength) {
  MigPrior prior;
  prior.strength = strength;
  if (strength < 0)
    return Error{"MIG prior strength must be >= 0, got " + std::to_string(strength)};
  if (Trim(text).empty()) return prior;
  double sum = 0;
  for (const std::string& entry : SplitTrimmed(text, ',')) {
    const size_t eq = entry.find('=');
    const std::string size = eq == std::string::npos ? "" : Trim(entry.substr(0, eq));
    const std::string value = eq == std::string::npos ? "" : Trim(entry.substr(eq + 1));
    if (size.size() < 2 || size.back() != 'g' ||
        !std::all_of(size.begin(), size.end() - 1, [](char c) { return c >= '0' && c <= '9'; })) {
      return Error{"MIG prior entry \"" + entry + "\": expected <N>g=<weight>, e.g. 1g=4"};
    }
    char* end = nullptr;
    const double w = std::strtod(value.c_str(), &end);
    if (value.empty() || end == nullptr || *end != '\0' || !(w >= 0) || w > 1e9) {
      return Error{"MIG prior entry \"" + entry + "\": weight must be a number >= 0"};
    }
    const auto slices = static_cast<uint32_t>(std::stoul(size.substr(0, size.size() - 1)));
    if (slices == 0 || slices > 32) {
      return Error{"MIG prior entry \"" + entry + "\": size must be 1g to 32g"};
    }
    prior.by_slices[slices] += w;
    sum += w;
  }
  if (sum <= 0) return Error{"MIG prior \"" + text + "\": at least one weight must be > 0"};
  return prior;
}

double FillReached(double churn) {
  if (!(churn > 0)) return 0;
  if (churn >= 1) return 1;
  // Solve resident(x) = 1 - churn for x, the mean lifetimes elapsed, where resident(x) =
  // (1 - e^-x) / x falls from 1 to 0. Newton's method from below converges (resident is
  // convex); the start is exact as churn -> 0 (churn ~ x / 2) and below as churn -> 1
  // (churn ~ 1 - 1 / x).
  const double target = 1 - churn;
  double x = 2 * churn;
  for (int i = 0; i < 100; ++i) {
    const double lost = -std::expm1(-x);  // 1 - e^-x, exact for small x
    const double gap = lost / x - target;
    const double slope = (x * std::exp(-x) - lost) / (x * x);  // < 0
    if (!(slope < 0)) break;
    const double next = x - gap / slope;
    if (!(next > 0) || std::abs(next - x) <= 1e-12 * x) {
      if (next > 0) x = next;
      break;
    }
    x = next;
  }
  return -std::expm1(-x);
}

double MigFleetSignals::StrandedScale(const void* rules, double whole_gpu_share) const {
  if (churn <= 0) return 1;
  const double stays = 1 - std::min(churn, 1.0);
  auto it = models.find(rules);
  if (it == models.end()) return stays;
  const double fullness = std::clamp(it->second.fullness, 0.0, 1.0);
  const double for_a_while = stays * std::pow(fullness, 4 * churn);
  // GPUs still filling but heading for full (the fullness reached so far over the share of the
  // long-run fill reached) will have requests waiting for the slice: it is lost as at saturation
  // to the requests that could use it, those that do not take a whole GPU (the whole share of
  // the mix as a weight: measured against none in docs/placement.md).
  const double reached = FillReached(churn);
  const double heading = reached > 0 ? std::min(1.0, fullness / reached) : 1.0;
  const double could_use = 1 - std::clamp(whole_gpu_share, 0.0, 1.0);
  return std::max(for_a_while, could_use * std::pow(heading, kHeadingFullnessExponent));
}

std::vector<double> MigFleetSignals::RoomUse(const mig::GpuMigModel& model,
                                             const std::vector<double>& shares) const {
  std::vector<double> use(shares.size(), 1.0);
  auto it = models.find(model.RulesIdentity());
  if (churn <= 0 || it == models.end()) return use;
  // Instances to come before the free memory is taken: free slices over the mix's mean slices
  // per instance; of profile p, its share of them.
  double slices_per_share = 0;
  for (size_t p = 0; p < shares.size(); ++p) {
    const auto& placements = model.profiles()[p].placements;
    if (shares[p] > 0 && !placements.empty())
      slices_per_share += shares[p] * placements.front().size;
  }
  if (!(slices_per_share > 0)) return use;
  const double left = std::min(churn, 1.0);
  const auto free_slices = static_cast<double>(std::max<int64_t>(it->second.free_slices, 0));
  for (size_t p = 0; p < shares.size() && p < it->second.room.size(); ++p) {
    const auto room = static_cast<double>(it->second.room[p]);
    if (!(shares[p] > 0) || room <= 0) continue;
    const double expected = shares[p] * free_slices / slices_per_share;
    use[p] = 1 - left * (1 - std::min(1.0, expected / room));
  }
  return use;
}

MigWeights::MigWeights(const MigDemandMix& mix, const MigPrior& prior, MigFleetSignals signals)
    : entries_(mix.Entries()), total_(mix.total()), prior_(prior), signals_(std::move(signals)) {
  for (const auto& [key, count] : entries_)
    (key.mem_mib > 0 ? memory_mass_ : fraction_mass_) += count;
}

const MigWeights::ModelWeights& MigWeights::Lookup(const mig::GpuMigModel& model) const {
  const void* key = model.RulesIdentity();
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  // The unit follows what the requests name. Memory values a slice by its GiB: a slice of an
  // RTX PRO 6000 holds 8 GiB, of an A100-40GB 5, and placeability is compared across the GPUs
  // of a mixed fleet. A fraction of a GPU (a percentage) gets the same fraction of any model,
  // so a slice is worth its share of the GPU: in GiB, room on a big GPU would be worth more to
  // such pods than the same room on a small one, steering them to the small GPUs. A mix of
  // both blends the two by how many requests name each; with no requests seen yet, GiB.
  const double memory_unit = model.SliceGib();
  const double fraction_unit =
      model.memory_slices() > 0 ? kGpuAsGib / static_cast<double>(model.memory_slices()) : 0;
  const double mass = memory_mass_ + fraction_mass_;
  const double unit =
      mass > 0 ? (memory_mass_ * memory_unit + fraction_mass_ * fraction_unit) / mass : memory_unit;
  // A stranded slice (free memory no profile of the mix can cover) is memory lost to requests
  // that name memory. To requests for a fraction of a GPU it is lost in full only when it also
  // leaves a compute slice idle: otherwise the GPU can still fill its compute with instances
  // (an H100 with 4g + 2g + 1g strands slice 7 and uses all seven compute slices). When most
  // of them take a whole GPU, what the partly used GPUs must do is fill, so that whole GPUs
  // stay free, and the slice's memory matters less; when small requests dominate, they compete
  // for exactly that memory. So the discount grows with the square of the whole-GPU share
  // (measured against its share and against none: docs/placement.md, "Stranded memory").
  //
  // Requests that name memory lose a stranded slice for as long as it stays stranded (at
  // saturation, for good), while room is only capacity that requests of the right shape may
  // take. At the unit's value, a 1g at slices 4-6 of an A100 whose slices 0-3 are taken (it
  // strands slice 7) cost less than opening an empty GPU, whose room for a 7g a 20% share of 7g
  // requests values at 1.6 slices; so GPUs filled with 1g and the 3g went in pairs. Twice the
  // value turns that (weights 1 to 3 measured: docs/placement.md, "Stranded memory counts
  // twice for memory requests"); with no requests seen yet, the unit is GiB and so is this.
  const double memory_share = mass > 0 ? memory_mass_ / mass : 1;
  // How long it stays lost scales all of it (MigFleetSignals::StrandedScale).
  std::vector<double> shares = Shares(model);
  const double whole_share = WholeGpuShare(model, shares);
  const double stranded_unit = unit * (1 + (kStrandedMemoryWeight - 1) * memory_share) *
                               signals_.StrandedScale(key, whole_share);
  const double discount = mass > 0 ? fraction_mass_ / mass * std::pow(whole_share, 2) : 0;
  // Room that requests will not take while it lasts is worth less (MigFleetSignals::RoomUse).
  const std::vector<double> use = signals_.RoomUse(model, shares);
  ModelWeights value{std::move(shares),
                     mig::StrandedValue{stranded_unit * (1 - discount), stranded_unit * discount}};
  for (size_t p = 0; p < value.profile_weights.size(); ++p) {
    const auto& placements = model.profiles()[p].placements;
    value.profile_weights[p] *= placements.empty() ? 0 : placements.front().size * unit * use[p];
  }
  return cache_.emplace(key, std::move(value)).first->second;
}

double MigWeights::WholeGpuShare(const mig::GpuMigModel& model, const std::vector<double>& shares) {
  double whole = 0;
  double all = 0;
  for (size_t p = 0; p < shares.size(); ++p) {
    const auto& placements = model.profiles()[p].placements;
    all += shares[p];
    if (!placements.empty() && placements.front().size >= model.memory_slices()) whole += shares[p];
  }
  return all > 0 ? whole / all : 0;
}

std::vector<double> MigWeights::Shares(const mig::GpuMigModel& model) const {
  const auto& profiles = model.profiles();
  std::vector<double> weights(profiles.size(), 0.0);
  // The prior: per size, the smallest plain (default media) allowed profile of that size.
  std::map<uint32_t, int> by_size;
  for (size_t p = 0; p < profiles.size(); ++p) {
    if (!model.Allowed(static_cast<int>(p)) || profiles[p].placements.empty()) continue;
    if (profiles[p].media() != model::MediaEngines::kDefault) continue;
    auto [slot, inserted] = by_size.emplace(profiles[p].slice_count, static_cast<int>(p));
    if (!inserted && profiles[p].memory_mib < profiles[slot->second].memory_mib) {
      slot->second = static_cast<int>(p);
    }
  }
  double prior_sum = 0;
  for (const auto& [size, p] : by_size) {
    if (prior_.by_slices.empty()) {
      prior_sum += 1;
    } else if (auto w = prior_.by_slices.find(size); w != prior_.by_slices.end()) {
      prior_sum += w->second;
    }
  }
  const double denominator = prior_.strength + total_;
  if (denominator <= 0) return weights;
  if (prior_sum > 0) {
    for (const auto& [size, p] : by_size) {
      double w = 1;
      if (!prior_.by_slices.empty()) {
        auto found = prior_.by_slices.find(size);
        w = found == prior_.by_slices.end() ? 0 : found->second;
      }
      weights[p] += prior_.strength * w / prior_sum / denominator;
    }
  }
  const int32_t largest = model.LargestProfileMemory();
  for (const auto& [key, count] : entries_) {
    mig::InstanceDemand demand{key.mem_mib, key.cores};
    if (key.mem_mib == 0) {
      demand.mem_mib = static_cast<int32_t>(static_cast<int64_t>(largest) * key.mem_percent / 100);
    }
    const std::vector<int> eligible = model.EligibleProfiles(demand);
    if (eligible.empty()) continue;  // cannot run on this model at all: no room to keep
    weights[eligible.front()] += count / denominator;
  }
  return weights;
}

}  // namespace tessera::sched
