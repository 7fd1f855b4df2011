#include <map>
#include <sstream>

#include "sim/report.h"

namespace tessera::sim {
namespace {

std::string ShortUuid(const std::string& uuid) {
  return uuid.size() > 12 ? uuid.substr(0, 12) + "…" : uuid;
}

}  // namespace

std::string StepText(const StepResult& r) {
  std::ostringstream out;
  if (r.action == "node") {
    out << "step " << r.step << ": node " << r.node << " updated";
    if (!r.node_unusable.empty()) out << ": takes no pods (" << r.node_unusable << ")";
    out << "\n";
    return out.str();
  }
  out << "step " << r.step << ": " << r.action << " " << r.pod;
  if (r.action == "delete") {
    if (!r.found) {
      out << ": held no devices\n";
      return out.str();
    }
    out << ": released";
    for (const auto& d : r.released) {
      out << " " << ShortUuid(d.uuid);
      if (!d.mig_profile.empty()) {
        out << " " << d.mig_profile << "@" << d.placement.start << "+" << d.placement.size;
      } else {
        out << " " << d.mem << "MiB/" << d.cores << "%";
      }
    }
    out << "\n";
    return out.str();
  }
  if (!r.error.empty()) {
    out << ": rejected: " << r.error << "\n";
    return out.str();
  }
  const sched::Decision& d = r.decision;
  if (d.passthrough()) {
    out << ": no GPU request, left to kube-scheduler\n";
    return out.str();
  }
  if (!d.scheduled()) {
    out << ": PENDING\n    " << d.message << "\n";
    for (const auto& [node, why] : d.failed_nodes) out << "    " << node << ": " << why << "\n";
    return out.str();
  }
  out << (r.adopted ? ": adopted on " : ": scheduled on ") << d.node << "\n";
  if (!r.warning.empty()) out << "    warning: " << r.warning << " (its GPUs are held whole)\n";
  for (size_t slot = 0; slot < d.container_names.size(); ++slot) {
    out << "    " << d.container_names[slot] << ":";
    if (slot >= d.containers.size() || d.containers[slot].empty()) out << " (no GPU)";
    if (slot < d.containers.size()) {
      for (const auto& g : d.containers[slot]) {
        out << " " << ShortUuid(g.uuid);
        if (!g.mig_profile.empty()) {
          out << " " << g.mig_profile << " at slices " << g.placement.start << "-"
              << g.placement.end() - 1;
        } else {
          out << " " << g.mem << " MiB, " << g.cores << "% cores";
        }
        out << ";";
      }
    }
    out << "\n";
  }
  return out.str();
}

std::string ClusterText(const state::ClusterState& state) {
  std::ostringstream out;
  for (const auto& [name, ns] : state.nodes()) {
    out << "  node " << name;
    if (!ns.usable()) {
      out << " (unusable: " << ns.unusable_reason << ")\n";
      continue;
    }
    out << "\n";
    for (size_t i = 0; i < ns.devices.size(); ++i) {
      const auto& d = ns.devices[i];
      const auto& u = ns.usage[i];
      out << "    GPU " << d.index << " " << ShortUuid(d.uuid) << " " << d.type << " [" << d.mode
          << "]";
      if (!u.Trusted()) out << " FAIL-CLOSED";
      out << "\n";
      if (d.IsMig()) {
        // One character per memory slice: the letter of the pod holding it, '.' when free.
        const uint32_t slices = ns.mig_models[i].memory_slices();
        std::map<std::string, char> letters;
        std::string map(slices, '.');
        for (const auto& inst : ns.instances[i]) {
          auto [it, inserted] =
              letters.emplace(inst.pod_key, 'A' + static_cast<char>(letters.size() % 26));
          for (uint32_t s = inst.placement.start; s < inst.placement.end() && s < slices; ++s) {
            map[s] = it->second;
          }
        }
        out << "      slices |" << map << "|  " << u.used_mem << "/" << d.total_mem_mib << " MiB, "
            << u.used_cores << "% cores\n";
        for (const auto& [pod, letter] : letters) {
          out << "        " << letter << " = " << pod << ":";
          for (const auto& inst : ns.instances[i]) {
            if (inst.pod_key == pod) {
              out << " " << inst.profile_name << "@" << inst.placement.start << "+"
                  << inst.placement.size;
            }
          }
          out << "\n";
        }
      } else {
        constexpr int kWidth = 20;
        int filled =
            d.total_mem_mib > 0 ? static_cast<int>(u.used_mem * kWidth / d.total_mem_mib) : 0;
        if (filled > kWidth) filled = kWidth;
        out << "      memory |" << std::string(filled, '#') << std::string(kWidth - filled, '.')
            << "|  " << u.used_mem << "/" << d.total_mem_mib << " MiB, " << u.used_cores
            << "% cores, " << u.used << "/" << d.count << " tasks\n";
      }
    }
  }
  return out.str();
}

}  // namespace tessera::sim
