#include <algorithm>
#include <sstream>
#include <string_view>

#include "core/sched/node_status.h"
#include "sim/report.h"

namespace tessera::sim {
namespace {

// GPU ids are shortened to this many characters ("GPU-30512c46…") where that keeps them apart.
constexpr size_t kShortGpuId = 12;
// The characters a pod can be drawn with in a slice map.
constexpr std::string_view kLetters =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

size_t CommonPrefix(const std::string& a, const std::string& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// Each id as printed: cut after the first character no other id shares (at least kShortGpuId
// long), in full where nothing would be cut.
std::map<std::string, std::string> DistinctGpuIds(const std::set<std::string>& uuids) {
  const std::vector<std::string> sorted(uuids.begin(), uuids.end());
  std::map<std::string, std::string> printed;
  for (size_t i = 0; i < sorted.size(); ++i) {
    // In sorted order the id sharing the longest prefix with this one is a neighbour.
    size_t shared = 0;
    if (i > 0) shared = CommonPrefix(sorted[i], sorted[i - 1]);
    if (i + 1 < sorted.size()) shared = std::max(shared, CommonPrefix(sorted[i], sorted[i + 1]));
    const size_t keep = std::max(kShortGpuId, shared + 1);
    printed[sorted[i]] = keep >= sorted[i].size() ? sorted[i] : sorted[i].substr(0, keep) + "…";
  }
  return printed;
}

// The GPUs of every node the scenario ever has, decoded as the simulator decodes them.
std::set<std::string> ScenarioGpus(const Scenario& scenario) {
  state::ClusterState nodes(scenario.config);
  for (const auto& node : scenario.nodes) nodes.UpsertNode(node);
  std::set<std::string> uuids;
  auto collect = [&] {
    for (const auto& [name, ns] : nodes.nodes()) {
      for (const auto& d : ns.devices) uuids.insert(d.uuid);
    }
  };
  collect();
  for (const auto& step : scenario.steps) {
    if (step.kind != ScenarioStep::Kind::kNode) continue;
    nodes.UpsertNode(step.node);
    collect();  // a node step may replace a node's GPUs: the old ones were printed too
  }
  return uuids;
}

}  // namespace

TextReport::TextReport(const Scenario& scenario)
    : gpu_ids_(DistinctGpuIds(ScenarioGpus(scenario))) {}

std::string TextReport::GpuId(const std::string& uuid) const {
  auto it = gpu_ids_.find(uuid);
  return it == gpu_ids_.end() ? uuid : it->second;
}

char TextReport::LetterFor(const std::string& pod, const std::set<std::string>& holding) {
  if (auto it = letters_.find(pod); it != letters_.end()) return it->second;
  char letter = kLetters[letters_given_ % kLetters.size()];
  if (letters_given_ >= kLetters.size()) {
    // Every letter has been given: take one from a pod that holds no MIG instance any more, so
    // the pods on screen keep theirs apart; only when all hold one do two pods share a letter.
    for (auto it = letters_.begin(); it != letters_.end(); ++it) {
      if (holding.count(it->first) == 0) {
        letter = it->second;
        letters_.erase(it);
        break;
      }
    }
  }
  ++letters_given_;
  letters_[pod] = letter;
  return letter;
}

std::string TextReport::Step(const StepResult& r) const {
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
      out << " " << GpuId(d.uuid);
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
    for (const auto& [node, why] : sched::FormatNodeStatuses(d.failed_nodes)) {
      out << "    " << node << ": " << why << "\n";
    }
    return out.str();
  }
  out << (r.adopted ? ": adopted on " : ": scheduled on ") << d.node << "\n";
  if (!r.warning.empty()) out << "    warning: " << r.warning << " (its GPUs are held whole)\n";
  for (size_t slot = 0; slot < d.container_names.size(); ++slot) {
    out << "    " << d.container_names[slot] << ":";
    if (slot >= d.containers.size() || d.containers[slot].empty()) out << " (no GPU)";
    if (slot < d.containers.size()) {
      for (const auto& g : d.containers[slot]) {
        out << " " << GpuId(g.uuid);
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

std::string TextReport::Cluster(const state::ClusterState& state) {
  std::set<std::string> holding;
  for (const auto& [name, ns] : state.nodes()) {
    for (const auto& instances : ns.instances) {
      for (const auto& inst : instances) holding.insert(inst.pod_key);
    }
  }
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
      out << "    GPU " << d.index << " " << GpuId(d.uuid) << " " << d.type << " [" << d.mode
          << "]";
      if (!u.Trusted()) out << " FAIL-CLOSED";
      out << "\n";
      if (d.IsMig()) {
        // One character per memory slice: the letter of the pod holding it, '.' when free.
        const uint32_t slices = ns.mig_models[i].memory_slices();
        std::map<std::string, char> letters;  // the pods on this GPU, by name
        std::string map(slices, '.');
        for (const auto& inst : ns.instances[i]) {
          const char letter = LetterFor(inst.pod_key, holding);
          letters.emplace(inst.pod_key, letter);
          for (uint32_t s = inst.placement.start; s < inst.placement.end() && s < slices; ++s) {
            map[s] = letter;
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

void WriteSimulation(Scenario scenario, const SimulationOutput& output, std::ostream& out) {
  TextReport text(scenario);
  Simulator sim(std::move(scenario));
  const bool maps = !output.json && !output.final_only;
  if (maps) out << "initial state\n" << text.Cluster(sim.state()) << "\n";
  for (size_t i = 0; i < sim.step_count(); ++i) {
    for (const auto& r : sim.RunStep(i)) out << (output.json ? StepJson(r) + "\n" : text.Step(r));
    if (maps) out << text.Cluster(sim.state()) << "\n";
  }
  if (output.json) {
    out << FinalJson(sim.state()) << "\n";
  } else if (output.final_only) {
    out << (sim.step_count() > 0 ? "\n" : "") << "final state\n"
        << text.Cluster(sim.state()) << "\n";
  }
}

}  // namespace tessera::sim
