#include "core/state/cluster_state.h"

#include <algorithm>
#include <bit>

#include "core/codec/node_register.h"
#include "core/common/strings.h"
#include "core/mig/layout_table.h"
#include "core/model/annotations.h"
#include "core/model/uuid_bits.h"

namespace tessera::state {

namespace ann = model::annotations;

bool NodeState::SameAs(const NodeState& o) const {
  return spec_id == o.spec_id && usage == o.usage &&
         cpu_allocatable_milli.has_value() == o.cpu_allocatable_milli.has_value() &&
         CpuFreeKey() == o.CpuFreeKey();
}

bool ClusterState::StateClass::Matches(const NodeState& node) const {
  return spec_id == node.spec_id && usage == node.usage &&
         cpu_known == node.cpu_allocatable_milli.has_value() && cpu_free == node.CpuFreeKey();
}

namespace {

void Mix(uint64_t& h, uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }

}  // namespace

void ClusterState::RefreshSummaries(NodeState& ns) {
  const size_t n = std::min(ns.devices.size(), ns.usage.size());
  ns.max_free_mem = 0;
  ns.totals = NodeTotals{};
  ns.gpu_summaries.assign(n, GpuSummary{});
  for (size_t i = 0; i < n; ++i) {
    const model::GpuDevice& d = ns.devices[i];
    const DeviceUsage& u = ns.usage[i];
    ns.max_free_mem = std::max(ns.max_free_mem, d.total_mem_mib - u.used_mem);
    ns.totals.slots += d.count;
    ns.totals.cores += d.total_cores;
    ns.totals.mem += d.total_mem_mib;
    ns.totals.used += u.used;
    ns.totals.used_cores += u.used_cores;
    ns.totals.used_mem += u.used_mem;
    ns.totals.idle = ns.totals.idle && u.used == 0;
    if (!d.IsMig()) {
      if (d.total_mem_mib > 0 &&
          (ns.totals.smallest_shared_mem == 0 || d.total_mem_mib < ns.totals.smallest_shared_mem)) {
        ns.totals.smallest_shared_mem = d.total_mem_mib;
      }
      ns.gpu_summaries[i].free_mem =
          static_cast<int32_t>(std::max<int64_t>(0, d.total_mem_mib - u.used_mem));
      ns.gpu_summaries[i].free_cores = std::max(0, d.total_cores - u.used_cores);
      ns.gpu_summaries[i].total_mem = d.total_mem_mib;
    }
    if (!d.IsMig() || i >= ns.mig_models.size()) continue;
    GpuSummary& g = ns.gpu_summaries[i];
    const mig::LayoutTable* table = ns.mig_models[i].table();
    if (table != nullptr) {
      g.rules = table;
      g.layout_id = table->IndexOf(u.layout);
    }
    g.open = d.healthy && u.Trusted() && ns.cordoned.count(d.uuid) == 0;
  }
  ns.summaries_current = ns.devices.size() == ns.usage.size();
}

void ClusterState::CountMigFill(NodeState& ns, bool removed) {
  for (const MigFillPart& part : ns.mig_fill_parts) {
    auto it = mig_fill_.find(part.rules);
    if (it == mig_fill_.end()) continue;
    it->second.used_slices -= part.used_slices;
    it->second.slices -= part.slices;
    for (size_t p = 0; p < part.room.size(); ++p) it->second.room[p] -= part.room[p];
    if (it->second.slices <= 0) mig_fill_.erase(it);
  }
  ns.mig_fill_parts.clear();
  if (removed) return;
  const size_t n = std::min({ns.devices.size(), ns.usage.size(), ns.mig_models.size()});
  for (size_t i = 0; i < n; ++i) {
    const mig::GpuMigModel& model = ns.mig_models[i];
    // Without a layout table the rules' identity is this object's address: not a key that
    // outlives the node.
    if (!ns.devices[i].IsMig() || model.table() == nullptr) continue;
    const MigFillPart part{
        model.RulesIdentity(), static_cast<int32_t>(std::popcount(ns.usage[i].layout.occupied)),
        static_cast<int32_t>(model.memory_slices()), model.Room(ns.usage[i].layout)};
    MigFill& fill = mig_fill_[part.rules];
    fill.used_slices += part.used_slices;
    fill.slices += part.slices;
    for (size_t p = 0; p < part.room.size(); ++p) fill.room[p] += part.room[p];
    ns.mig_fill_parts.push_back(part);
  }
}

void ClusterState::RefreshSignature(NodeState& ns) {
  // Every change to a node ends here.
  ns.change_stamp = ++last_change_stamp_;
  RefreshSummaries(ns);
  CountMigFill(ns, /*removed=*/false);
  uint64_t h = static_cast<uint64_t>(ns.spec_id);
  for (const auto& u : ns.usage) {
    Mix(h, (static_cast<uint64_t>(u.used) << 32) ^ static_cast<uint32_t>(u.used_cores));
    Mix(h, static_cast<uint64_t>(u.used_mem));
    Mix(h, (static_cast<uint64_t>(u.layout.occupied) << 32) ^
               static_cast<uint32_t>(u.fail_closed + u.layout_conflicts));
    Mix(h, u.foreign_slices);
  }
  Mix(h, static_cast<uint64_t>(ns.cpu_allocatable_milli.value_or(-1) - ns.cpu_used_milli));
  ns.signature = h;

  // The state class: unchanged if the node's state is, else an existing class of this state or
  // a new one.
  if (ns.state_class >= 0) {
    if (classes_[ns.state_class].Matches(ns)) return;
    ReleaseClass(ns.state_class);
    ns.state_class = -1;
  }
  auto [begin, end] = classes_by_signature_.equal_range(h);
  for (auto it = begin; it != end; ++it) {
    if (classes_[it->second].Matches(ns)) {
      ns.state_class = it->second;
      ++classes_[it->second].members;
      return;
    }
  }
  int id = static_cast<int>(classes_.size());
  if (!free_classes_.empty()) {
    id = free_classes_.back();
    free_classes_.pop_back();
  } else {
    classes_.emplace_back();
  }
  classes_[id] =
      StateClass{h, ns.spec_id, ns.usage, ns.cpu_allocatable_milli.has_value(), ns.CpuFreeKey(), 1};
  classes_by_signature_.emplace(h, id);
  ns.state_class = id;
}

void ClusterState::ReleaseClass(int id) {
  StateClass& c = classes_[id];
  if (--c.members > 0) return;
  auto [begin, end] = classes_by_signature_.equal_range(c.signature);
  for (auto it = begin; it != end; ++it) {
    if (it->second == id) {
      classes_by_signature_.erase(it);
      break;
    }
  }
  c.usage.clear();
  free_classes_.push_back(id);
}

ClusterState::ClusterState(const ClusterState& other)
    : config_(other.config_),
      quotas_(other.quotas_),
      blocked_(other.blocked_),
      spec_ids_(other.spec_ids_),
      layout_tables_(other.layout_tables_),
      nodes_(other.nodes_),
      pods_(other.pods_),
      applied_(other.applied_),
      classes_(other.classes_),
      free_classes_(other.free_classes_),
      classes_by_signature_(other.classes_by_signature_),
      last_change_stamp_(other.last_change_stamp_),
      mig_kinds_(other.mig_kinds_),
      mig_fill_(other.mig_fill_),
      mig_pods_(other.mig_pods_) {
  RebuildNodeList();
}

ClusterState& ClusterState::operator=(const ClusterState& other) {
  if (this != &other) {
    ClusterState copy(other);
    *this = std::move(copy);
  }
  return *this;
}

ClusterState ClusterState::Subset(const std::vector<std::string>& names) const {
  ClusterState s(config_);
  s.quotas_ = quotas_;
  s.blocked_ = blocked_;
  s.spec_ids_ = spec_ids_;
  s.layout_tables_ = layout_tables_;
  for (const std::string& name : names) {
    auto it = nodes_.find(name);
    if (it == nodes_.end() || s.nodes_.count(name) > 0) continue;
    NodeState& ns = s.nodes_.emplace(name, it->second).first->second;
    ns.state_class = -1;
    ns.mig_fill_parts.clear();  // counted into the subset's own fill below
    s.CountMigKinds(ns, +1);
    for (const std::string& key : ns.pods) {
      if (auto p = pods_.find(key); p != pods_.end()) {
        s.pods_.emplace(key, p->second);
        if (!p->second.mig.empty()) ++s.mig_pods_;
      }
      if (auto a = applied_.find(key); a != applied_.end()) s.applied_.emplace(key, a->second);
    }
    s.RefreshSignature(ns);
  }
  s.RebuildNodeList();
  return s;
}

void ClusterState::RebuildNodeList() {
  node_set_version_.Bump();
  node_list_.clear();
  by_name_.clear();
  by_name_.reserve(nodes_.size());
  for (auto& [name, ns] : nodes_) {
    by_name_.emplace(name, &ns);
    ns.name_order = static_cast<int>(node_list_.size());
    ns.tie_order = StableHash(ns.name);
    node_list_.push_back(&ns);
  }
}

void ClusterState::AddToNodeList(NodeState& node) {
  node_set_version_.Bump();
  by_name_[node.name] = &node;
  node.tie_order = StableHash(node.name);
  auto at = std::lower_bound(
      node_list_.begin(), node_list_.end(), node.name,
      [](const NodeState* listed, const std::string& name) { return listed->name < name; });
  at = node_list_.insert(at, &node);
  // The list points into nodes_, which this object owns and may change.
  for (auto it = at; it != node_list_.end(); ++it) {
    const_cast<NodeState*>(*it)->name_order = static_cast<int>(it - node_list_.begin());
  }
}

void ClusterState::RemoveFromNodeList(const NodeState& node) {
  if (node.name_order < 0 || static_cast<size_t>(node.name_order) >= node_list_.size() ||
      node_list_[node.name_order] != &node) {
    return RebuildNodeList();  // not where it should be: start over
  }
  auto at = node_list_.erase(node_list_.begin() + node.name_order);
  for (auto it = at; it != node_list_.end(); ++it) {
    const_cast<NodeState*>(*it)->name_order = static_cast<int>(it - node_list_.begin());
  }
}

int NodeState::DeviceIndex(const std::string& uuid) const {
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].uuid == uuid) return static_cast<int>(i);
  }
  return -1;
}

const NodeState* ClusterState::node(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

const PodReservation* ClusterState::pod(const std::string& key) const {
  auto it = pods_.find(key);
  return it == pods_.end() ? nullptr : &it->second;
}

std::shared_ptr<const mig::LayoutTable> ClusterState::LayoutTableFor(
    const mig::GpuMigModel& model) {
  std::shared_ptr<const mig::LayoutTable>& table = layout_tables_[model.RulesKey()];
  if (table == nullptr) table = std::make_shared<const mig::LayoutTable>(model);
  return table;
}

void ClusterState::UpsertNode(const model::Node& node) {
  NodeState& ns = nodes_[node.name];
  CountMigKinds(ns, -1);  // counted again below, as the node's devices are now
  // Forget what this node's pods applied: usage is rebuilt against the new device list.
  for (const auto& key : ns.pods) applied_.erase(key);
  const std::string* reg = node.Annotation(std::string(ann::kNodeRegister));
  // Most updates of a node (heartbeats, the plugin's handshake, kubelet status) leave its
  // registration as it was: its devices and MIG rules are kept, not decoded again.
  const std::string* old_reg =
      ns.registration_decoded ? ns.node.Annotation(std::string(ann::kNodeRegister)) : nullptr;
  const bool same_registration = reg != nullptr && old_reg != nullptr && *reg == *old_reg;
  // The foreign instances too are decoded only when their annotation changed.
  const std::string foreign_key(ann::kForeignMigInstances);
  const std::string* foreign = node.Annotation(foreign_key);
  const std::string* old_foreign = ns.node.Annotation(foreign_key);
  const bool same_foreign =
      (foreign == nullptr && old_foreign == nullptr) ||
      (foreign != nullptr && old_foreign != nullptr && *foreign == *old_foreign);
  const std::string old_unusable = std::move(ns.unusable_reason);
  const std::set<std::string> old_cordoned = std::move(ns.cordoned);
  ns.name = node.name;
  ns.node = node;
  ns.unusable_reason.clear();
  ns.pair_scores.clear();
  ns.cordoned.clear();
  if (!same_registration) DecodeRegistration(reg, ns);
  if (!same_foreign) DecodeForeignMig(foreign, ns);
  if (reg == nullptr) {
    ns.unusable_reason = "node unregistered";
  } else if (!ns.registration_error.empty()) {
    ns.unusable_reason = "node unusable: " + ns.registration_error;
  } else if (!ns.foreign_mig_error.empty()) {
    // Which slices are taken is unknown: no placement on this node can be shown safe.
    ns.unusable_reason = "node unusable: " + ns.foreign_mig_error;
  }
  if (auto b = blocked_.find(node.name); b != blocked_.end()) ns.unusable_reason = b->second;
  if (ns.usable()) {
    if (const std::string* ps = node.Annotation(std::string(ann::kNodePairScore))) {
      auto scores = codec::DecodePairScores(*ps);
      if (!scores.ok()) {
        ns.unusable_reason = "node unusable: " + scores.error().message;
        ns.devices.clear();
        ns.mig_models.clear();
        ns.types_upper.clear();
        ns.any_mig = false;
        ns.all_mig = false;
        ns.registration_decoded = false;  // the devices no longer hold its decode
      } else {
        ns.pair_scores = std::move(scores.value());
      }
    }
  }
  if (const std::string* c = node.Annotation(std::string(ann::kDeviceCordon))) {
    for (auto& uuid : SplitTrimmed(*c, ',')) ns.cordoned.insert(uuid);
  }
  ns.cpu_allocatable_milli = model::NodeCpuAllocatableMilli(node);
  if (!same_registration || ns.spec_id < 0 || ns.unusable_reason != old_unusable ||
      ns.cordoned != old_cordoned) {
    ns.spec_id = SpecId(ns);
  }
  ResetUsage(ns);
  for (const auto& key : ns.pods) Apply(ns, pods_.at(key));
  ApplyForeign(ns);
  RefreshSignature(ns);
  CountMigKinds(ns, +1);
  if (node_list_.size() != nodes_.size()) AddToNodeList(ns);
}

void ClusterState::CountMigKinds(const NodeState& node, int delta) {
  for (size_t dev = 0; dev < node.devices.size() && dev < node.mig_models.size(); ++dev) {
    const model::GpuDevice& d = node.devices[dev];
    if (!d.IsMig()) continue;
    if (delta > 0) {
      mig_kinds_.try_emplace(d.type, MigKind{0, node.mig_models[dev]}).first->second.gpus += delta;
      continue;
    }
    auto kind = mig_kinds_.find(d.type);
    if (kind == mig_kinds_.end()) continue;
    kind->second.gpus += delta;
    if (kind->second.gpus <= 0) mig_kinds_.erase(kind);
  }
}

void ClusterState::DecodeForeignMig(const std::string* text, NodeState& ns) {
  ns.foreign_mig.clear();
  ns.foreign_mig_error.clear();
  if (text == nullptr) return;
  auto decoded = codec::DecodeForeignMigInstances(*text, ns.name);
  if (decoded.ok()) {
    ns.foreign_mig = std::move(decoded.value());
  } else {
    ns.foreign_mig_error = decoded.error().message;
  }
}

void ClusterState::ApplyForeign(NodeState& ns) {
  std::set<int> touched;
  for (const auto& f : ns.foreign_mig) {
    const int dev = ns.DeviceIndex(f.gpu_uuid);
    // Only MIG placement reads them: a GPU not in MIG mode (or not registered) has no slices.
    if (dev < 0 || !ns.devices[dev].IsMig()) continue;
    ns.instances[dev].push_back(MigInstance{"", ns.mig_models[dev].ProfileIndex(f.profile),
                                            f.profile, f.placement, /*foreign=*/true});
    touched.insert(dev);
  }
  for (int dev : touched) RebuildLayout(ns, dev);
}

void ClusterState::DecodeRegistration(const std::string* reg, NodeState& ns) {
  ns.devices.clear();
  ns.mig_models.clear();
  ns.registration_error.clear();
  ns.registration_decoded = reg != nullptr;
  if (reg != nullptr) {
    auto devices = codec::DecodeNodeRegister(*reg);
    if (!devices.ok()) {
      ns.registration_error = devices.error().message;
    } else {
      // HAMi's NVIDIA backend takes only entries whose type names NVIDIA (hami-protocol.md 5,
      // typeDevices); other vendors' entries on a mixed node are not NVIDIA GPUs.
      for (auto& d : devices.value()) {
        if (ToUpper(d.type).find("NVIDIA") != std::string::npos) ns.devices.push_back(std::move(d));
      }
    }
  }
  for (const auto& d : ns.devices) {
    mig::GpuMigModel& model = ns.mig_models.emplace_back(d, config_.nvidia.AllowedProfiles(d.type));
    if (d.IsMig()) model.set_table(LayoutTableFor(model));
  }
  ns.types_upper.clear();
  ns.gpu_uuid_bits = 0;
  ns.any_mig = false;
  ns.all_mig = !ns.devices.empty();
  for (const auto& d : ns.devices) {
    ns.types_upper.push_back(ToUpper(d.type));
    ns.gpu_uuid_bits |= model::UuidBits(d.uuid);
    ns.any_mig = ns.any_mig || d.IsMig();
    ns.all_mig = ns.all_mig && d.IsMig();
  }
}

int ClusterState::SpecId(const NodeState& ns) {
  std::string key = ns.unusable_reason + "\n";
  for (size_t i = 0; i < ns.devices.size(); ++i) {
    const auto& d = ns.devices[i];
    key += std::to_string(d.index) + "|" + std::to_string(d.count) + "|" +
           std::to_string(d.total_mem_mib) + "|" + std::to_string(d.total_cores) + "|" + d.type +
           "|" + std::to_string(d.numa) + "|" + d.mode + "|" + (d.healthy ? "h" : "u") +
           (ns.cordoned.count(d.uuid) > 0 ? "c" : "-");
    for (size_t p = 0; p < d.mig_profiles.size(); ++p) {
      const auto& prof = d.mig_profiles[p];
      key += "|" + prof.name + ":" + std::to_string(prof.memory_mib) + ":" +
             std::to_string(prof.core) + ":" + std::to_string(prof.max_count) + ":" +
             (ns.mig_models[i].Allowed(static_cast<int>(p)) ? "a" : "x");
      for (const auto& pl : prof.placements) {
        key += ":" + std::to_string(pl.start) + "+" + std::to_string(pl.size);
      }
    }
    key += "\n";
  }
  auto [it, inserted] = spec_ids_.try_emplace(key, static_cast<int>(spec_ids_.size()));
  return it->second;
}

void ClusterState::RemoveNode(const std::string& name) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return;
  // Pods stay known: if the node comes back, their reservations are applied again.
  for (const auto& key : it->second.pods) applied_.erase(key);
  CountMigKinds(it->second, -1);
  CountMigFill(it->second, /*removed=*/true);
  if (it->second.state_class >= 0) ReleaseClass(it->second.state_class);
  RemoveFromNodeList(it->second);
  by_name_.erase(name);
  nodes_.erase(it);
  node_set_version_.Bump();
}

void ClusterState::SetNodeBlocked(const std::string& name, const std::string& reason) {
  if (reason.empty()) {
    if (blocked_.erase(name) == 0) return;
  } else {
    auto [it, inserted] = blocked_.try_emplace(name, reason);
    if (!inserted && it->second == reason) return;
    it->second = reason;
  }
  auto it = nodes_.find(name);
  // Re-derived from the Node object (a node known only from its pods has none yet).
  if (it != nodes_.end() && it->second.node.name == name) UpsertNode(model::Node(it->second.node));
}

namespace {
std::string NamespaceOf(const std::string& key) { return key.substr(0, key.find('/')); }
}  // namespace

void ClusterState::ResetUsage(NodeState& ns) {
  ns.cpu_used_milli = 0;
  ns.usage.assign(ns.devices.size(), DeviceUsage{});
  ns.instances.assign(ns.devices.size(), {});
}

void ClusterState::AddPod(PodReservation reservation) {
  RemovePod(reservation.key);
  std::string key = reservation.key;
  std::string node = reservation.node;
  pods_[key] = std::move(reservation);
  if (!pods_[key].mig.empty()) ++mig_pods_;
  quotas_.AddUse(NamespaceOf(key), QuotaUseOf(pods_[key].devices, pods_[key].num_init));
  // A pod may arrive before its node registers; it is applied when the node does.
  NodeState& ns = nodes_[node];
  if (ns.name.empty()) {
    ns.name = node;
    ns.unusable_reason = "node unregistered";
  }
  ns.pods.insert(key);
  Apply(ns, pods_[key]);
  RefreshSignature(ns);
  if (node_list_.size() != nodes_.size()) AddToNodeList(ns);
}

std::optional<PodReservation> ClusterState::RemovePod(const std::string& key) {
  auto it = pods_.find(key);
  if (it == pods_.end()) return std::nullopt;
  PodReservation r = std::move(it->second);
  pods_.erase(it);
  if (!r.mig.empty()) --mig_pods_;
  quotas_.RemoveUse(NamespaceOf(key), QuotaUseOf(r.devices, r.num_init));
  auto nit = nodes_.find(r.node);
  if (nit != nodes_.end()) {
    if (applied_.count(key) > 0) nit->second.cpu_used_milli -= r.cpu_milli;
    Unapply(nit->second, key);
    nit->second.pods.erase(key);
    RefreshSignature(nit->second);
  }
  applied_.erase(key);
  return r;
}

namespace {
bool HoldsWhole(const PodReservation& pod, const std::string& uuid) {
  return std::binary_search(pod.held_gpus.begin(), pod.held_gpus.end(), uuid);
}
}  // namespace

void ClusterState::Apply(NodeState& ns, const PodReservation& pod) {
  std::vector<Applied>& applied = applied_[pod.key];
  applied.clear();
  ns.cpu_used_milli += pod.cpu_milli;
  auto entry = [&](int device) -> Applied& {
    for (auto& a : applied) {
      if (a.device == device) return a;
    }
    applied.push_back(Applied{device});
    return applied.back();
  };
  // Collapse per GPU (hami-protocol.md 4): init containers count at their peak, app containers
  // add up; MIG instances are physical, so every container's instance counts.
  struct Acc {
    int32_t init_mem = 0, init_cores = 0, init_slots = 0;
    int64_t app_mem = 0;
    int32_t app_cores = 0, app_slots = 0;
  };
  std::map<int, Acc> acc;
  std::set<int> mig_devices_with_entries;
  for (size_t slot = 0; slot < pod.devices.size(); ++slot) {
    bool init = static_cast<int>(slot) < pod.num_init;
    for (const auto& d : pod.devices[slot]) {
      int dev = ns.DeviceIndex(d.uuid);
      if (dev < 0) continue;  // not on this node (stale annotation): nothing to hold
      Acc& a = acc[dev];
      if (ns.devices[dev].IsMig()) {
        mig_devices_with_entries.insert(dev);
        a.app_mem += d.used_mem;
        a.app_cores += d.used_cores;
        a.app_slots += 1;
      } else if (init) {
        a.init_mem = std::max(a.init_mem, d.used_mem);
        a.init_cores = std::max(a.init_cores, d.used_cores);
        a.init_slots = 1;
      } else {
        a.app_mem += d.used_mem;
        a.app_cores += d.used_cores;
        a.app_slots += 1;
      }
    }
  }
  for (const auto& [dev, a] : acc) {
    Applied& e = entry(dev);
    e.used = std::max({a.init_slots, a.app_slots, 1});
    e.mem = std::max<int64_t>(a.init_mem, a.app_mem);
    e.cores = std::max(a.init_cores, a.app_cores);
  }
  std::set<int> mig_devices_with_allocations;
  std::set<int> touched_layouts;
  for (const auto& m : pod.mig) {
    int dev = ns.DeviceIndex(m.gpu_uuid);
    if (dev < 0) {
      // A reservation on a GPU this node does not have: fail closed on its MIG GPUs.
      for (size_t i = 0; i < ns.devices.size(); ++i) {
        if (ns.devices[i].IsMig()) entry(static_cast<int>(i)).fail_closed++;
      }
      continue;
    }
    if (!ns.devices[dev].IsMig()) {
      entry(dev).fail_closed++;  // a MIG instance on a GPU that is not in MIG mode
      continue;
    }
    mig_devices_with_allocations.insert(dev);
    int profile = ns.mig_models[dev].ProfileIndex(m.profile);
    ns.instances[dev].push_back(MigInstance{pod.key, profile, m.profile, m.placement});
    touched_layouts.insert(dev);
  }
  // A MIG GPU used without a placement: its occupancy is unknown, so nothing else goes there.
  for (int dev : mig_devices_with_entries) {
    if (mig_devices_with_allocations.count(dev) == 0 && !HoldsWhole(pod, ns.devices[dev].uuid)) {
      entry(dev).fail_closed++;
    }
  }
  // GPUs named by an annotation that does not decode: held whole (fail closed).
  for (const auto& uuid : pod.held_gpus) {
    const int dev = ns.DeviceIndex(uuid);
    if (dev >= 0) entry(dev).fail_closed++;
  }
  for (const auto& a : applied) {
    DeviceUsage& u = ns.usage[a.device];
    u.used += a.used;
    u.used_mem += a.mem;
    u.used_cores += a.cores;
    u.fail_closed += a.fail_closed;
  }
  for (int dev : touched_layouts) RebuildLayout(ns, dev);
}

void ClusterState::Unapply(NodeState& ns, const std::string& key) {
  auto it = applied_.find(key);
  if (it == applied_.end()) return;
  for (const auto& a : it->second) {
    if (a.device < 0 || a.device >= static_cast<int>(ns.usage.size())) continue;
    DeviceUsage& u = ns.usage[a.device];
    u.used -= a.used;
    u.used_mem -= a.mem;
    u.used_cores -= a.cores;
    u.fail_closed -= a.fail_closed;
  }
  for (size_t dev = 0; dev < ns.instances.size(); ++dev) {
    auto& list = ns.instances[dev];
    auto end = std::remove_if(list.begin(), list.end(),
                              [&](const MigInstance& m) { return m.pod_key == key; });
    if (end != list.end()) {
      list.erase(end, list.end());
      RebuildLayout(ns, static_cast<int>(dev));
    }
  }
  applied_.erase(it);
}

namespace {
// Places tessera's instances of a MIG GPU (not the foreign ones) on `layout`; returns how many
// break the GPU's rules (overlap, unknown profile or placement), whose slices are taken anyway.
int32_t PlaceTesserasInstances(const NodeState& ns, int dev, mig::Layout* layout) {
  const mig::GpuMigModel& model = ns.mig_models[dev];
  int32_t conflicts = 0;
  for (const auto& inst : ns.instances[dev]) {
    if (inst.foreign) continue;
    if (inst.profile >= 0 && model.CanPlace(*layout, inst.profile, inst.placement)) {
      model.Place(*layout, inst.profile, inst.placement);
      continue;
    }
    conflicts++;
    layout->occupied |= mig::PlacementMask(inst.placement);
  }
  return conflicts;
}
}  // namespace

void ClusterState::RebuildLayout(NodeState& ns, int dev) {
  const mig::GpuMigModel& model = ns.mig_models[dev];
  DeviceUsage& u = ns.usage[dev];
  // Instances that break the GPU's rules mean the annotations disagree with the hardware: the
  // GPU is then not offered to anyone.
  u.layout = mig::Layout{};
  u.layout_conflicts = PlaceTesserasInstances(ns, dev, &u.layout);
  u.foreign_slices = 0;
  // A foreign instance is on the hardware whatever the annotations say: it adds its slices (and
  // its count, when its profile and placement are legal there) but never closes the GPU. One
  // that overlaps a pod's reserved instance leaves both sets of slices taken.
  for (const auto& inst : ns.instances[dev]) {
    if (!inst.foreign) continue;
    const uint32_t mask = mig::PlacementMask(inst.placement);
    u.foreign_slices |= mask;
    if (inst.profile >= 0 && model.CanPlace(u.layout, inst.profile, inst.placement)) {
      model.Place(u.layout, inst.profile, inst.placement);
    } else {
      u.layout.occupied |= mask;
    }
  }
}

mig::Layout ClusterState::LayoutWithoutForeign(const NodeState& ns, int dev) {
  mig::Layout layout;
  PlaceTesserasInstances(ns, dev, &layout);
  return layout;
}

namespace {
// HAMi's AllInitContainersSucceeded: at least one init container status, all terminated with 0.
bool AllInitContainersSucceeded(const model::Pod& pod) {
  if (pod.init_containers.empty() || pod.init_container_statuses.empty()) return false;
  return std::all_of(
      pod.init_container_statuses.begin(), pod.init_container_statuses.end(),
      [](const model::ContainerStatus& s) { return s.terminated && s.exit_code == 0; });
}
}  // namespace

Result<std::optional<PodReservation>> ClusterState::ReservationFromAnnotations(
    const model::Pod& pod) {
  const std::string* node = pod.Annotation(std::string(ann::kAssignedNode));
  const std::string* allocated = pod.Annotation(std::string(ann::kDevicesAllocated));
  const std::string* mig = pod.Annotation(std::string(ann::kMigAllocations));
  const std::string node_name = node != nullptr && !node->empty() ? *node : pod.node_name;
  if (node_name.empty() || (allocated == nullptr && mig == nullptr)) {
    return std::optional<PodReservation>{};
  }
  PodReservation r;
  r.key = pod.Key();
  r.uid = pod.uid;
  r.node = node_name;
  r.num_init = static_cast<int>(pod.init_containers.size());
  r.cpu_milli = model::PodCpuRequestMilli(pod);
  r.priority = pod.priority;
  r.labels = pod.labels;
  r.controller_kind = pod.controller_kind;
  auto hold = [&](const std::string& annotation, const std::string& text,
                  const std::string& message) {
    for (auto& uuid : codec::GpuUuidsIn(text)) r.held_gpus.push_back(std::move(uuid));
    if (!r.problem.empty()) r.problem += "; ";
    r.problem += "pod " + pod.Key() + ": annotation " + annotation + ": " + message;
  };
  if (allocated != nullptr) {
    auto devices = codec::DecodePodDevices(*allocated);
    if (devices.ok()) {
      r.devices = std::move(devices.value());
    } else {
      hold(std::string(ann::kDevicesAllocated), *allocated, devices.error().message);
    }
  }
  if (mig != nullptr) {
    auto allocations = codec::DecodeMigAllocations(*mig);
    if (allocations.ok()) {
      r.mig = std::move(allocations.value());
    } else {
      // Without the placements, every GPU either annotation names is held whole.
      hold(std::string(ann::kMigAllocations), *mig, allocations.error().message);
      if (allocated != nullptr) {
        for (auto& uuid : codec::GpuUuidsIn(*allocated)) r.held_gpus.push_back(std::move(uuid));
      }
    }
  }
  // Once every init container has succeeded, their shares of shared GPUs are free again (HAMi's
  // AppContainersOnlyDeviceUsage). Their MIG instances are physical and stay until the pod ends.
  if (AllInitContainersSucceeded(pod)) {
    for (int slot = 0; slot < r.num_init && slot < static_cast<int>(r.devices.size()); ++slot) {
      std::vector<codec::ContainerDevice> kept;
      for (size_t pos = 0; pos < r.devices[slot].size(); ++pos) {
        const bool mig_instance = std::any_of(r.mig.begin(), r.mig.end(), [&](const auto& m) {
          return m.container_index == slot && m.device_index == static_cast<int>(pos);
        });
        if (mig_instance) kept.push_back(r.devices[slot][pos]);
      }
      r.devices[slot] = std::move(kept);
    }
  }
  std::sort(r.held_gpus.begin(), r.held_gpus.end());
  r.held_gpus.erase(std::unique(r.held_gpus.begin(), r.held_gpus.end()), r.held_gpus.end());
  return std::optional<PodReservation>(std::move(r));
}

}  // namespace tessera::state
