#include "service/ui_state.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tessera::service {
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

// Strings by first appearance, written once as a table. The strings are the state's own, which
// outlive the encoding (it runs under the service's lock).
class Table {
 public:
  size_t Index(std::string_view s) {
    auto [it, inserted] = index_.emplace(s, names_.size());
    if (inserted) names_.push_back(s);
    return it->second;
  }
  void Write(std::string* out) const {
    out->push_back('[');
    for (size_t i = 0; i < names_.size(); ++i) {
      if (i > 0) out->push_back(',');
      AppendString(out, names_[i]);
    }
    out->push_back(']');
  }

 private:
  std::unordered_map<std::string_view, size_t> index_;
  std::vector<std::string_view> names_;
};

}  // namespace

std::string EncodeUiState(const state::ClusterState& state,
                          const std::map<std::string, std::string>& waiting) {
  Table types;
  std::string nodes;
  nodes.reserve(state.node_list().size() * 600);
  auto num = [&](int64_t v) { AppendNumber(&nodes, v); };
  // Pods are numbered in the state's (name) order, so a pod's number is its position there;
  // nodes are found by name in node_list(), which is in name order too.
  std::vector<std::string_view> pod_names;
  pod_names.reserve(state.pods().size());
  for (const auto& entry : state.pods()) pod_names.push_back(entry.first);
  const auto& node_list = state.node_list();
  auto node_of = [&](const std::string& name) -> const state::NodeState* {
    auto it = std::lower_bound(
        node_list.begin(), node_list.end(), name,
        [](const state::NodeState* n, const std::string& v) { return n->name < v; });
    return it != node_list.end() && (*it)->name == name ? *it : nullptr;
  };
  // Who holds each shared GPU (a share of it, or the whole GPU when its annotation is
  // unreadable): (node position, GPU, pod number), grouped by GPU below.
  struct Hold {
    uint32_t node, gpu, pod;
  };
  std::vector<Hold> holds;
  holds.reserve(state.pods().size());
  uint32_t pod_number = 0;
  for (const auto& [key, r] : state.pods()) {
    const uint32_t pod = pod_number++;
    const state::NodeState* ns = node_of(r.node);
    if (ns == nullptr) continue;
    const size_t first = holds.size();
    auto mark = [&](const std::string& uuid) {
      const int dev = ns->DeviceIndex(uuid);
      if (dev < 0 || ns->devices[dev].IsMig()) return;
      for (size_t h = first; h < holds.size(); ++h) {
        if (holds[h].gpu == static_cast<uint32_t>(dev)) return;
      }
      holds.push_back(Hold{static_cast<uint32_t>(ns->name_order), static_cast<uint32_t>(dev), pod});
    };
    for (const auto& slot : r.devices) {
      for (const auto& cd : slot) mark(cd.uuid);
    }
    for (const auto& uuid : r.held_gpus) mark(uuid);
  }
  std::stable_sort(holds.begin(), holds.end(), [](const Hold& x, const Hold& y) {
    return x.node != y.node ? x.node < y.node : x.gpu < y.gpu;
  });
  auto pod_index = [&](const std::string& key) {
    auto it = std::lower_bound(pod_names.begin(), pod_names.end(), std::string_view(key));
    return static_cast<int64_t>(it - pod_names.begin());
  };
  size_t next_hold = 0;
  nodes.push_back('[');
  bool first_node = true;
  for (const state::NodeState* ns : state.node_list()) {
    if (!first_node) nodes.push_back(',');
    first_node = false;
    nodes.append("{\"name\":");
    AppendString(&nodes, ns->name);
    nodes.append(",\"reason\":");
    AppendString(&nodes, ns->unusable_reason);
    nodes.append(",\"gpus\":[");
    for (size_t i = 0; i < ns->devices.size(); ++i) {
      const model::GpuDevice& d = ns->devices[i];
      const state::DeviceUsage& u = ns->usage[i];
      if (i > 0) nodes.push_back(',');
      nodes.push_back('[');
      num(d.index);
      nodes.push_back(',');
      AppendString(&nodes, d.uuid);
      nodes.push_back(',');
      num(static_cast<int64_t>(types.Index(d.type)));
      nodes.push_back(',');
      AppendString(&nodes, d.healthy && u.Trusted() ? d.mode : d.mode + ",unhealthy");
      for (const int64_t v :
           {static_cast<int64_t>(u.used), static_cast<int64_t>(d.count), u.used_mem,
            static_cast<int64_t>(d.total_mem_mib), static_cast<int64_t>(u.used_cores),
            static_cast<int64_t>(d.total_cores)}) {
        nodes.push_back(',');
        num(v);
      }
      nodes.push_back(',');
      num(d.IsMig() ? ns->mig_models[i].memory_slices() : 0);
      nodes.append(",[");
      for (size_t k = 0; k < ns->instances[i].size(); ++k) {
        const state::MigInstance& inst = ns->instances[i][k];
        if (k > 0) nodes.push_back(',');
        nodes.push_back('[');
        num(pod_index(inst.pod_key));
        nodes.push_back(',');
        AppendString(&nodes, inst.profile_name);
        nodes.push_back(',');
        num(inst.placement.start);
        nodes.push_back(',');
        num(inst.placement.size);
        nodes.push_back(']');
      }
      nodes.append("],[");
      bool first_holder = true;
      while (next_hold < holds.size() &&
             holds[next_hold].node == static_cast<uint32_t>(ns->name_order) &&
             holds[next_hold].gpu == i) {
        if (!first_holder) nodes.push_back(',');
        first_holder = false;
        num(holds[next_hold++].pod);
      }
      nodes.append("]]");
    }
    nodes.append("]}");
  }
  nodes.push_back(']');

  std::string out;
  out.reserve(nodes.size() + 4096);
  out.append("{\"types\":");
  types.Write(&out);
  out.append(",\"pods\":[");
  for (size_t i = 0; i < pod_names.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendString(&out, pod_names[i]);
  }
  out.push_back(']');
  out.append(",\"nodes\":");
  out.append(nodes);
  out.append(",\"waiting\":[");
  bool first = true;
  for (const auto& [pod, message] : waiting) {
    if (!first) out.push_back(',');
    first = false;
    out.push_back('[');
    AppendString(&out, pod);
    out.push_back(',');
    AppendString(&out, message);
    out.push_back(']');
  }
  out.append("]}");
  return out;
}

}  // namespace tessera::service
