#include "core/sched/mig_placement.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>

#include "core/mig/layout_table.h"

namespace tessera::sched {
namespace {

// See kPlaceabilityEpsilon in core/mig/layout.cc: smaller differences are rounding.
constexpr double kEpsilon = 1e-9;

bool DeviceAdmitted(const state::NodeState& node, size_t dev, const PodPreferences& prefs) {
  const model::GpuDevice& d = node.devices[dev];
  if (!d.IsMig() || !d.healthy || !node.usage[dev].Trusted()) return false;
  if (node.cordoned.count(d.uuid) > 0) return false;
  if (!ModeAdmits(prefs.vgpu_mode, d.mode)) return false;
  if (!prefs.use_uuids.empty() &&
      std::find(prefs.use_uuids.begin(), prefs.use_uuids.end(), d.uuid) == prefs.use_uuids.end()) {
    return false;
  }
  if (std::find(prefs.nouse_uuids.begin(), prefs.nouse_uuids.end(), d.uuid) !=
      prefs.nouse_uuids.end()) {
    return false;
  }
  const std::string& type = node.types_upper[dev];
  bool type_ok = prefs.use_types.empty();
  for (const auto& t : prefs.use_types) type_ok = type_ok || type.find(t) != std::string::npos;
  for (const auto& t : prefs.nouse_types) type_ok = type_ok && type.find(t) == std::string::npos;
  if (!type_ok) return false;
  return !(prefs.gpu_policy.mutex && node.usage[dev].used != 0);
}

// Clears every inner vector and sizes the outer one to `n`, keeping what was allocated.
template <typename T>
void ResetEach(std::vector<std::vector<T>>* v, size_t n) {
  if (v->size() < n) v->resize(n);
  for (size_t i = 0; i < n; ++i) (*v)[i].clear();
}

class PlanSearch {
 public:
  PlanSearch(const state::NodeState& node, const PodRequest& request, const PodPreferences& prefs,
             const MigGoal* goal, MigPlanBuffers* buffers)
      : node_(node),
        goal_(goal),
        instances_(buffers->instances),
        devices_(buffers->devices),
        pending_(buffers->pending),
        owners_(buffers->owners),
        choice_(buffers->choice),
        goals_(buffers->goals),
        before_(buffers->before),
        after_(buffers->after),
        best_pending_(buffers->best_pending),
        best_owners_(buffers->best_owners) {
    instances_.clear();
    for (size_t slot = 0; slot < request.slots.size(); ++slot) {
      const ContainerRequest& k = request.slots[slot];
      for (int32_t i = 0; i < k.nums; ++i) instances_.emplace_back(static_cast<int>(slot), &k);
    }
    const size_t n = node.devices.size();
    // With the node's summaries and a pod that admits every open MIG GPU, the GPUs' device,
    // model and usage objects are read only to arrange what the decision's cache lacks.
    summaries_ = goal_ != nullptr && goal_->admits_open_mig_gpus && node.summaries_current &&
                 node.gpu_summaries.size() == n;
    devices_.clear();
    for (size_t dev = 0; dev < n; ++dev) {
      const bool admitted = summaries_
                                ? node.gpu_summaries[dev].open && node.gpu_summaries[dev].rules
                                : DeviceAdmitted(node, dev, prefs);
      if (admitted) devices_.push_back(static_cast<int>(dev));
    }
    // A MIG GPU without a layout table is planned from its objects: then so is the node.
    if (summaries_ && devices_.size() != static_cast<size_t>(std::count_if(
                                             node.gpu_summaries.begin(), node.gpu_summaries.end(),
                                             [](const state::GpuSummary& g) { return g.open; }))) {
      summaries_ = false;
      devices_.clear();
      for (size_t dev = 0; dev < n; ++dev) {
        if (DeviceAdmitted(node, dev, prefs)) devices_.push_back(static_cast<int>(dev));
      }
    }
    ResetEach(&pending_, n);
    ResetEach(&owners_, n);
    choice_.assign(instances_.size(), -1);
    if (goal_ != nullptr) {
      if (goal_->cache != nullptr) {
        cache_ = goal_->cache;
      } else {
        cache_ = &own_cache_.emplace();
      }
      goals_.resize(n);
      before_.resize(n);
      after_.resize(n);
      const void* last_rules = nullptr;
      int last_dev = -1;
      for (int dev : devices_) {
        const mig::GpuMigModel& model = node.mig_models[dev];
        const void* rules = summaries_ ? node.gpu_summaries[dev].rules : model.RulesIdentity();
        if (rules != last_rules) {
          goals_[dev] =
              cache_->GoalFor(rules, model, *goal_->weights, goal_->allow_larger_profiles);
          last_rules = rules;
        } else {
          goals_[dev] = goals_[last_dev];  // GPUs of one model are usually side by side
        }
        last_dev = dev;
        before_[dev] = Lookup(dev, {}).score;
        after_[dev] = before_[dev];
      }
    }
  }

  std::optional<MigPlan> Run(size_t num_slots, bool with_slots) {
    if (instances_.empty() || devices_.empty()) return std::nullopt;
    Visit(0);
    if (!found_) return std::nullopt;
    MigPlan plan = best_;
    if (with_slots) plan.slots.assign(num_slots, {});
    for (int dev : devices_) {
      if (best_pending_[dev].empty()) continue;
      if (!with_slots && goal_ != nullptr) {
        // The figures are the cache entry's: the model's profiles are not read.
        const MigArrangeCache::Entry& entry = Lookup(dev, best_pending_[dev]);
        plan.instances += static_cast<int32_t>(best_owners_[dev].size());
        plan.cores += entry.cores;
        plan.assigned_mem += entry.score.memory;
        continue;
      }
      const mig::GpuMigModel& model = node_.mig_models[dev];
      const auto& profiles = model.profiles();
      const auto assign = [&](size_t j, const mig::InstanceChoice& c) {
        plan.instances += 1;
        plan.cores += profiles[c.profile].core;
        plan.assigned_mem += profiles[c.profile].memory_mib;
        if (!with_slots) return;
        plan.slots[best_owners_[dev][j]].push_back(DeviceAssignment{
            dev, profiles[c.profile].memory_mib, profiles[c.profile].core, c.profile, c.placement});
      };
      if (goal_ != nullptr) {
        // The search arranged these instances on this layout already: the cache has the answer.
        const MigArrangeCache::Entry& entry = Lookup(dev, best_pending_[dev]);
        for (size_t j = 0; j < best_owners_[dev].size(); ++j) assign(j, entry.Choice(j));
      } else {
        auto arranged = model.Arrange(node_.usage[dev].layout, best_pending_[dev]);
        for (size_t j = 0; j < best_owners_[dev].size(); ++j) assign(j, (*arranged)[j]);
      }
    }
    return plan;
  }

 private:
  static constexpr long kBudget = 200000;

  // The decision cache's arrangement of `demands` on `dev` as it is.
  const MigArrangeCache::Entry& Lookup(int dev, const std::vector<mig::InstanceDemand>& demands) {
    const mig::GpuMigModel& model = node_.mig_models[dev];
    if (!summaries_) return cache_->Get(model, node_.usage[dev].layout, demands, goals_[dev]);
    const state::GpuSummary& g = node_.gpu_summaries[dev];
    return cache_->Get(g.rules, model, node_.usage[dev].layout, g.layout_id, demands, goals_[dev]);
  }

  mig::InstanceDemand Demand(size_t t, int dev) const {
    const ContainerRequest& k = *instances_[t].second;
    int32_t mem = k.mem_mib;
    if (mem == 0) {
      mem = static_cast<int32_t>(
          static_cast<int64_t>(node_.mig_models[dev].LargestProfileMemory()) * k.mem_percent / 100);
    }
    return mig::InstanceDemand{mem, k.cores};
  }

  // An earlier GPU with the same rules, the same layout and the same instances of this pod
  // gives the same answer: trying this one too only finds ties.
  bool SameAsEarlier(size_t i) const {
    const int dev = devices_[i];
    if (summaries_) {
      const state::GpuSummary& a = node_.gpu_summaries[dev];
      for (size_t j = 0; j < i; ++j) {
        const int other = devices_[j];
        const state::GpuSummary& b = node_.gpu_summaries[other];
        if (a.rules != b.rules) continue;
        const bool same_layout =
            a.layout_id >= 0
                ? a.layout_id == b.layout_id
                : b.layout_id < 0 && node_.usage[dev].layout == node_.usage[other].layout;
        if (same_layout && pending_[dev] == pending_[other]) return true;
      }
      return false;
    }
    for (size_t j = 0; j < i; ++j) {
      const int other = devices_[j];
      const auto& a = node_.mig_models[dev];
      const auto& b = node_.mig_models[other];
      if (a.table() == nullptr || a.table() != b.table()) continue;
      if (node_.usage[dev].layout == node_.usage[other].layout &&
          pending_[dev] == pending_[other]) {
        return true;
      }
    }
    return false;
  }

  MigPlan Score() const {
    MigPlan plan;
    for (int dev : devices_) {
      if (pending_[dev].empty()) continue;
      plan.gpus_used++;
      plan.memory += after_[dev].memory;
      plan.placeability_drop += before_[dev].placeability - after_[dev].placeability;
      plan.largest_gain += after_[dev].largest - before_[dev].largest;
    }
    return plan;
  }

  bool Better(const MigPlan& a, const MigPlan& b) const {
    if (!goal_->allow_larger_profiles && a.memory != b.memory) return a.memory < b.memory;
    if (a.placeability_drop < b.placeability_drop - kEpsilon) return true;
    if (a.placeability_drop > b.placeability_drop + kEpsilon) return false;
    if (a.largest_gain != b.largest_gain) return a.largest_gain > b.largest_gain;
    return a.gpus_used < b.gpus_used;
  }

  void Leaf() {
    if (goal_ == nullptr) {
      found_ = true;
      done_ = true;
    } else {
      MigPlan plan = Score();
      if (found_ && !Better(plan, best_)) return;
      found_ = true;
      best_ = std::move(plan);
    }
    CopyEach(pending_, &best_pending_);
    CopyEach(owners_, &best_owners_);
  }

  // Copies the first node-size entries (the buffers may be longer, from a larger node).
  template <typename T>
  void CopyEach(const std::vector<std::vector<T>>& from, std::vector<std::vector<T>>* to) const {
    const size_t n = node_.devices.size();
    if (to->size() < n) to->resize(n);
    for (size_t i = 0; i < n; ++i) (*to)[i].assign(from[i].begin(), from[i].end());
  }

  void Visit(size_t t) {
    if (done_) return;
    if (t == instances_.size()) {
      Leaf();
      return;
    }
    if (++calls_ > kBudget && found_) {
      done_ = true;
      return;
    }
    // Identical instances of one container go to GPUs in non-decreasing order: each set of
    // GPUs is tried once, not once per permutation.
    size_t first = 0;
    if (t > 0 && instances_[t - 1].first == instances_[t].first) first = choice_[t - 1];
    for (size_t i = first; i < devices_.size() && !done_; ++i) {
      const int dev = devices_[i];
      if (goal_ != nullptr && SameAsEarlier(i)) continue;
      const mig::GpuMigModel& model = node_.mig_models[dev];
      pending_[dev].push_back(Demand(t, dev));
      const mig::ArrangeScore saved = goal_ != nullptr ? after_[dev] : mig::ArrangeScore{};
      bool fits = false;
      if (goal_ == nullptr) {
        fits = model.Arrange(node_.usage[dev].layout, pending_[dev]).has_value();
      } else {
        // The same instances on a GPU in the same state come up in many branches, and on many
        // nodes: the cache arranges them once per decision.
        const MigArrangeCache::Entry& entry = Lookup(dev, pending_[dev]);
        fits = entry.fits;
        if (fits) after_[dev] = entry.score;
      }
      if (fits) {
        owners_[dev].push_back(instances_[t].first);
        choice_[t] = static_cast<int>(i);
        Visit(t + 1);
        owners_[dev].pop_back();
      }
      if (goal_ != nullptr) after_[dev] = saved;
      pending_[dev].pop_back();
    }
  }

  const state::NodeState& node_;
  const MigGoal* goal_;
  std::vector<std::pair<int, const ContainerRequest*>>& instances_;
  std::vector<int>& devices_;
  std::vector<std::vector<mig::InstanceDemand>>& pending_;
  std::vector<std::vector<int>>& owners_;
  std::vector<int>& choice_;
  std::optional<MigArrangeCache> own_cache_;  // when the goal brings none
  MigArrangeCache* cache_ = nullptr;
  std::vector<mig::ArrangeGoal>& goals_;
  std::vector<mig::ArrangeScore>& before_;
  std::vector<mig::ArrangeScore>& after_;
  MigPlan best_;
  std::vector<std::vector<mig::InstanceDemand>>& best_pending_;
  std::vector<std::vector<int>>& best_owners_;
  bool found_ = false;
  bool done_ = false;
  bool summaries_ = false;  // GPUs chosen and keyed by the node's summaries
  long calls_ = 0;
};

}  // namespace

namespace {
size_t MixDemands(size_t h,
                  const std::array<mig::InstanceDemand, MigArrangeCache::kMaxKeyDemands>& demands,
                  uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) {
    const auto& d = demands[i];
    h = (h * 1099511628211ULL) ^ (static_cast<uint64_t>(static_cast<uint32_t>(d.mem_mib)) << 16 ^
                                  static_cast<uint64_t>(static_cast<uint32_t>(d.cores)));
  }
  return h;
}
}  // namespace

size_t MigArrangeCache::KeyHash::operator()(const Key& key) const {
  return MixDemands(mig::LayoutHash{}(key.layout) ^ (std::hash<const void*>{}(key.rules) * 31),
                    key.demands, key.count);
}

size_t MigArrangeCache::KeyHash::operator()(const IdKey& key) const {
  return MixDemands(static_cast<size_t>(key.layout_id) * 0x9e3779b97f4a7c15ULL ^
                        (std::hash<const void*>{}(key.rules) * 31),
                    key.demands, key.count);
}

void MigArrangeCache::Fill(const mig::GpuMigModel& model, const mig::Layout& base,
                           const std::vector<mig::InstanceDemand>& demands,
                           const mig::ArrangeGoal& goal, Entry* entry) {
  auto arranged = model.Arrange(base, demands, goal, &entry->score);
  entry->fits = arranged.has_value();
  entry->cores = 0;
  if (!arranged) return;
  for (const auto& c : *arranged) entry->cores += model.profiles()[c.profile].core;
  if (demands.size() > kMaxKeyDemands) {
    entry->choices = std::move(*arranged);
  } else {
    std::copy(arranged->begin(), arranged->end(), entry->first.begin());
  }
}

const MigArrangeCache::Entry& MigArrangeCache::Get(const mig::GpuMigModel& model,
                                                   const mig::Layout& base,
                                                   const std::vector<mig::InstanceDemand>& demands,
                                                   const mig::ArrangeGoal& goal) {
  return Get(model.RulesIdentity(), model, base, -1, demands, goal);
}

const MigArrangeCache::Entry& MigArrangeCache::Get(const void* rules, const mig::GpuMigModel& model,
                                                   const mig::Layout& base, int32_t layout_id,
                                                   const std::vector<mig::InstanceDemand>& demands,
                                                   const mig::ArrangeGoal& goal) {
  if (demands.size() > kMaxKeyDemands) {
    scratch_.choices.clear();
    Fill(model, base, demands, goal, &scratch_);
    return scratch_;
  }
  const auto count = static_cast<uint32_t>(demands.size());
  if (layout_id >= 0) {
    IdKey key{rules, layout_id, count, {}};
    std::copy(demands.begin(), demands.end(), key.demands.begin());
    auto [it, inserted] = by_id_.try_emplace(key);
    if (inserted) Fill(model, base, demands, goal, &it->second);
    return it->second;
  }
  Key key{rules, base, {}, count};
  std::copy(demands.begin(), demands.end(), key.demands.begin());
  auto [it, inserted] = entries_.try_emplace(key);
  if (inserted) Fill(model, base, demands, goal, &it->second);
  return it->second;
}

const mig::ArrangeGoal& MigArrangeCache::GoalFor(const mig::GpuMigModel& model,
                                                 const MigWeights& weights,
                                                 bool allow_larger_profiles) {
  return GoalFor(model.RulesIdentity(), model, weights, allow_larger_profiles);
}

const mig::ArrangeGoal& MigArrangeCache::GoalFor(const void* rules, const mig::GpuMigModel& model,
                                                 const MigWeights& weights,
                                                 bool allow_larger_profiles) {
  for (const auto& [key, goal] : goals_) {
    if (key == rules) return goal;
  }
  return goals_
      .emplace_back(rules, mig::ArrangeGoal{&weights.For(model), allow_larger_profiles,
                                            weights.Stranded(model)})
      .second;
}

bool MigPlanMemo::Describe(const state::NodeState& node) {
  probe_.clear();
  if (!node.summaries_current || node.gpu_summaries.size() != node.devices.size()) return false;
  for (const state::GpuSummary& g : node.gpu_summaries) {
    if (!g.open) continue;
    if (g.rules == nullptr || g.layout_id < 0) return false;
    probe_.emplace_back(g.rules, g.layout_id);
  }
  return true;
}

const std::optional<MigPlan>* MigPlanMemo::Find() const {
  ++lookups_;
  auto it = plans_.find(probe_);
  if (it == plans_.end()) return nullptr;
  ++hits_;
  return &it->second;
}

void MigPlanMemo::Store(const std::optional<MigPlan>& plan) { plans_.emplace(probe_, plan); }

size_t MigPlanMemo::Hash::operator()(const Gpus& gpus) const {
  size_t h = gpus.size();
  for (const auto& [rules, id] : gpus) {
    h = (h * 1099511628211ULL) ^ std::hash<const void*>{}(rules);
    h = (h * 1099511628211ULL) ^ static_cast<size_t>(static_cast<uint32_t>(id));
  }
  return h;
}

namespace {

std::optional<MigPlan> SearchPlan(const state::NodeState& node, const PodRequest& request,
                                  const PodPreferences& prefs, const MigGoal* goal,
                                  bool with_slots) {
  const bool with_goal = goal != nullptr && goal->weights != nullptr;
  std::optional<MigPlanBuffers> own;  // only without the decision's (a node planned alone)
  MigPlanBuffers* buffers = with_goal && goal->buffers != nullptr ? goal->buffers : &own.emplace();
  PlanSearch search(node, request, prefs, with_goal ? goal : nullptr, buffers);
  return search.Run(request.slots.size(), with_slots);
}

}  // namespace

std::optional<MigPlan> PlanMigPlacement(const state::NodeState& node, const PodRequest& request,
                                        const PodPreferences& prefs, const MigGoal* goal,
                                        bool with_slots) {
  // A plan without assignments is the same for every node with the same admitted GPUs.
  MigPlanMemo* memo =
      goal != nullptr && goal->weights != nullptr && !with_slots && goal->admits_open_mig_gpus
          ? goal->plans
          : nullptr;
  if (memo == nullptr || !memo->Worthwhile() || !memo->Describe(node)) {
    return SearchPlan(node, request, prefs, goal, with_slots);
  }
  if (const std::optional<MigPlan>* known = memo->Find()) return *known;
  std::optional<MigPlan> plan = SearchPlan(node, request, prefs, goal, with_slots);
  memo->Store(plan);
  return plan;
}

std::optional<SlotAssignments> JointMigSearch(const state::NodeState& node,
                                              const PodRequest& request,
                                              const PodPreferences& prefs) {
  auto plan = PlanMigPlacement(node, request, prefs, nullptr);
  if (!plan) return std::nullopt;
  return std::move(plan->slots);
}

bool AdmitsOpenMigGpus(const PodPreferences& prefs) {
  // DeviceAdmitted's checks that do not depend on the GPU's state.
  return prefs.use_uuids.empty() && prefs.nouse_uuids.empty() && prefs.use_types.empty() &&
         prefs.nouse_types.empty() && !prefs.gpu_policy.mutex &&
         ModeAdmits(prefs.vgpu_mode, model::kMigMode);
}

bool OnlyMigDevicesAdmitted(const state::NodeState& node, const PodPreferences& prefs) {
  // A node of MIG GPUs only (most MIG nodes) answers without touching its devices.
  if (node.all_mig) return ModeAdmits(prefs.vgpu_mode, model::kMigMode);
  bool any = false;
  for (const auto& d : node.devices) {
    if (!ModeAdmits(prefs.vgpu_mode, d.mode)) continue;
    if (!d.IsMig()) return false;
    any = true;
  }
  return any;
}

}  // namespace tessera::sched
