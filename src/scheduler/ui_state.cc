#include "scheduler/ui_state.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <string_view>
#include <utility>

#include "core/state/gpu_holders.h"

namespace tessera::scheduler {
namespace {

void AppendString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (const char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
          out->append(buf);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

void AppendNumber(std::string* out, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, end);
}

std::string_view NamespaceOf(std::string_view key) { return key.substr(0, key.find('/')); }

// A pod's share of one shared GPU, collapsed as the GPU's use is (hami-protocol.md 4): init
// containers at their peak, app containers added up; the larger of the two.
std::pair<int64_t, int64_t> ShareOf(const state::PodReservation* pod, const std::string& uuid) {
  if (pod == nullptr) return {0, 0};
  int64_t init_mem = 0, init_cores = 0, app_mem = 0, app_cores = 0;
  for (size_t slot = 0; slot < pod->devices.size(); ++slot) {
    const bool init = static_cast<int>(slot) < pod->num_init;
    for (const codec::ContainerDevice& d : pod->devices[slot]) {
      if (d.uuid != uuid) continue;
      if (init) {
        init_mem = std::max<int64_t>(init_mem, d.used_mem);
        init_cores = std::max<int64_t>(init_cores, d.used_cores);
      } else {
        app_mem += d.used_mem;
        app_cores += d.used_cores;
      }
    }
  }
  return {std::max(init_mem, app_mem), std::max(init_cores, app_cores)};
}

}  // namespace

size_t UiStateEncoder::StringIndex(const std::string& s, std::vector<size_t>* used) {
  auto [it, inserted] = string_index_.try_emplace(s, strings_.size());
  if (inserted) {
    strings_.push_back(s);
    string_uses_.push_back(0);
  }
  used->push_back(it->second);
  return it->second;
}

void UiStateEncoder::CountUses(const std::vector<size_t>& strings, int delta) {
  for (const size_t i : strings) {
    if (delta > 0 && string_uses_[i]++ == 0) ++strings_in_use_;
    if (delta < 0 && --string_uses_[i] == 0) --strings_in_use_;
  }
}

size_t UiStateEncoder::KindIndex(const Kind& kind) {
  auto [it, inserted] = kind_index_.try_emplace(kind, kinds_.size());
  if (inserted) kinds_.push_back(kind);
  return it->second;
}

std::shared_ptr<const std::string> UiStateEncoder::EncodeNode(const state::ClusterState& state,
                                                              const state::NodeState& node,
                                                              std::vector<size_t>* strings) {
  strings->clear();
  auto out = std::make_shared<std::string>();
  std::string& o = *out;
  o.reserve(128 + node.devices.size() * 64 + node.pods.size() * 24);
  auto num = [&](int64_t v) { AppendNumber(&o, v); };
  o.append("{\"name\":");
  AppendString(&o, node.name);
  o.append(",\"reason\":");
  AppendString(&o, node.unusable_reason);
  // The node's pods in key order (so grouped by namespace); a pod's number is its position.
  std::vector<const std::string*> keys;
  keys.reserve(node.pods.size());
  for (const std::string& key : node.pods) keys.push_back(&key);
  o.append(",\"pods\":[");
  std::string_view group;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string_view key = *keys[i];
    const std::string_view ns = NamespaceOf(key);
    if (i == 0 || ns != group) {
      if (i > 0) o.push_back(']');
      if (i > 0) o.push_back(',');
      o.push_back('[');
      num(static_cast<int64_t>(StringIndex(std::string(ns), strings)));
      group = ns;
    }
    o.push_back(',');
    AppendString(&o, key.substr(std::min(key.size(), ns.size() + 1)));
  }
  if (!keys.empty()) o.push_back(']');
  o.push_back(']');
  auto pod_number = [&](const std::string& key) {
    auto it = std::lower_bound(keys.begin(), keys.end(), key,
                               [](const std::string* k, const std::string& v) { return *k < v; });
    return static_cast<int64_t>(it - keys.begin());
  };
  // Who holds each shared GPU: a share of it, or all of it when its annotation is unreadable.
  const std::vector<std::vector<size_t>> holders =
      state::PodsHoldingEachGpu(state, node, /*shared_only=*/true);
  std::vector<std::pair<std::pair<int64_t, int64_t>, size_t>> share_index;  // share, string
  o.append(",\"gpus\":[");
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const model::GpuDevice& d = node.devices[i];
    const state::DeviceUsage& u = node.usage[i];
    if (i > 0) o.push_back(',');
    o.push_back('[');
    num(d.index);
    o.push_back(',');
    AppendString(&o, d.uuid);
    o.push_back(',');
    const int64_t type = static_cast<int64_t>(StringIndex(d.type, strings));
    const int64_t mode = static_cast<int64_t>(
        StringIndex(d.healthy && u.Trusted() ? d.mode : d.mode + ",unhealthy", strings));
    const int64_t slices = d.IsMig() ? node.mig_models[i].memory_slices() : 0;
    num(static_cast<int64_t>(KindIndex(Kind{type, mode, static_cast<int64_t>(d.count),
                                            static_cast<int64_t>(d.total_mem_mib),
                                            static_cast<int64_t>(d.total_cores), slices})));
    for (const int64_t v :
         {static_cast<int64_t>(u.used), u.used_mem, static_cast<int64_t>(u.used_cores)}) {
      o.push_back(',');
      num(v);
    }
    o.append(",[");
    for (size_t k = 0; k < node.instances[i].size(); ++k) {
      const state::MigInstance& inst = node.instances[i][k];
      if (k > 0) o.push_back(',');
      o.push_back('[');
      num(inst.foreign ? -1 : pod_number(inst.pod_key));  // -1: not tessera's, no pod
      o.push_back(',');
      num(static_cast<int64_t>(StringIndex(inst.profile_name, strings)));
      o.push_back(',');
      num(inst.placement.start);
      o.push_back(',');
      num(inst.placement.size);
      o.push_back(']');
    }
    o.append("],[");
    for (size_t k = 0; k < holders[i].size(); ++k) {
      if (k > 0) o.push_back(',');
      num(static_cast<int64_t>(holders[i][k]));
    }
    // Each holder's share, in the holders' order, as a string "MiB/cores" of the table ("whole"
    // for a pod holding the GPU whole because its annotation does not decode): shares repeat,
    // so an index costs less than the numbers, and the table's rebuild bounds them. Left out
    // when nobody holds a share (every MIG GPU).
    o.push_back(']');
    if (!holders[i].empty()) o.append(",[");
    for (size_t k = 0; k < holders[i].size(); ++k) {
      if (k > 0) o.push_back(',');
      const state::PodReservation* pod = state.pod(*keys[holders[i][k]]);
      const bool whole = pod != nullptr && std::find(pod->held_gpus.begin(), pod->held_gpus.end(),
                                                     d.uuid) != pod->held_gpus.end();
      const std::pair<int64_t, int64_t> share =
          whole ? std::pair<int64_t, int64_t>{-1, -1} : ShareOf(pod, d.uuid);
      // A node's shares are few: found here before a string is made and looked up.
      auto seen = std::find_if(share_index.begin(), share_index.end(),
                               [&](const auto& e) { return e.first == share; });
      if (seen == share_index.end()) {
        const size_t index = StringIndex(
            whole ? "whole" : std::to_string(share.first) + "/" + std::to_string(share.second),
            strings);
        seen = share_index.insert(share_index.end(), {share, index});
      }
      num(static_cast<int64_t>(seen->second));
    }
    if (!holders[i].empty()) o.push_back(']');
    o.push_back(']');
  }
  o.append("]}");
  std::sort(strings->begin(), strings->end());
  strings->erase(std::unique(strings->begin(), strings->end()), strings->end());
  return out;
}

void UiStateEncoder::Reset() {
  strings_.clear();
  string_index_.clear();
  string_uses_.clear();
  strings_in_use_ = 0;
  kinds_.clear();
  kind_index_.clear();
  tables_.clear();
  tables_strings_ = 0;
  tables_kinds_ = 0;
  fragments_.clear();
}

UiStateEncoder::Snapshot UiStateEncoder::Collect(
    const state::ClusterState& state, const std::map<std::string, std::string>& waiting) {
  ++collects_;
  bool changed = false;
  last_encoded_ = 0;
  Snapshot snap;
  snap.nodes.reserve(state.node_list().size());
  for (const state::NodeState* node : state.node_list()) {
    Fragment& f = fragments_[node->name];
    if (!f.json || f.stamp != node->change_stamp) {
      CountUses(f.strings, -1);
      f.json = EncodeNode(state, *node, &f.strings);
      CountUses(f.strings, +1);
      f.stamp = node->change_stamp;
      ++last_encoded_;
      changed = true;
    }
    f.seen = collects_;
    snap.nodes.push_back(f.json);
  }
  if (fragments_.size() > snap.nodes.size()) {  // nodes went away
    std::erase_if(fragments_, [&](const auto& entry) {
      if (entry.second.seen == collects_) return false;
      CountUses(entry.second.strings, -1);
      return true;
    });
    changed = true;
  }
  // The append-only table keeps the strings of pods long gone: built afresh once most of it is
  // unused (then every string is in use, so this happens once).
  if (strings_.size() > std::max(kMinStringsBeforeRebuild, 2 * strings_in_use_)) {
    Reset();
    return Collect(state, waiting);
  }
  if (strings_.size() != tables_strings_ || kinds_.size() != tables_kinds_ || tables_.empty()) {
    tables_ = "\"strings\":[";
    for (size_t i = 0; i < strings_.size(); ++i) {
      if (i > 0) tables_.push_back(',');
      AppendString(&tables_, strings_[i]);
    }
    tables_.append("],\"kinds\":[");
    for (size_t i = 0; i < kinds_.size(); ++i) {
      if (i > 0) tables_.push_back(',');
      tables_.push_back('[');
      for (size_t k = 0; k < kinds_[i].size(); ++k) {
        if (k > 0) tables_.push_back(',');
        AppendNumber(&tables_, kinds_[i][k]);
      }
      tables_.push_back(']');
    }
    tables_.push_back(']');
    tables_strings_ = strings_.size();
    tables_kinds_ = kinds_.size();
    changed = true;
  }
  snap.waiting.push_back('[');
  bool first = true;
  for (const auto& [pod, message] : waiting) {
    if (!first) snap.waiting.push_back(',');
    first = false;
    snap.waiting.push_back('[');
    AppendString(&snap.waiting, pod);
    snap.waiting.push_back(',');
    AppendString(&snap.waiting, message);
    snap.waiting.push_back(']');
  }
  snap.waiting.push_back(']');
  if (snap.waiting != last_waiting_) {
    last_waiting_ = snap.waiting;
    changed = true;
  }
  if (changed) ++version_;  // always on the first call: the tables are new
  snap.version = version_;
  snap.tables = tables_;
  return snap;
}

std::string UiStateEncoder::Snapshot::Join() const {
  size_t size = tables.size() + waiting.size() + 32;
  for (const auto& n : nodes) size += n->size() + 1;
  std::string out;
  out.reserve(size);
  out.push_back('{');
  out.append(tables);
  out.append(",\"nodes\":[");
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(*nodes[i]);
  }
  out.append("],\"waiting\":");
  out.append(waiting);
  out.push_back('}');
  return out;
}

std::string EncodeUiState(const state::ClusterState& state,
                          const std::map<std::string, std::string>& waiting) {
  UiStateEncoder encoder;
  return encoder.Collect(state, waiting).Join();
}

}  // namespace tessera::scheduler
