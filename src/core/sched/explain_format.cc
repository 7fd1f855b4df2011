#include <string>

#include "core/sched/explain.h"

namespace tessera::sched {
namespace {

// One character per memory slice: '.' free, a letter per instance (a, b, ... in start order).
std::string SliceMap(const GpuExplanation& g) {
  std::string map(g.memory_slices, '.');
  char letter = 'a';
  for (const ExplainedInstance& inst : g.instances) {
    for (uint32_t s = inst.start; s < inst.start + inst.size && s < map.size(); ++s)
      map[s] = letter;
    letter = letter == 'z' ? 'a' : static_cast<char>(letter + 1);
  }
  return map;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void FormatGpu(const GpuExplanation& g, std::string* out) {
  std::string& o = *out;
  o += "    GPU " + std::to_string(g.index) + " " + g.uuid + " (" + g.type + ", " + g.mode + "): ";
  o += g.reason.empty() ? "could take one device" : g.reason;
  if (g.memory_slices > 0) {
    o += "\n      slices |" + SliceMap(g) + "|";
    char letter = 'a';
    for (const ExplainedInstance& inst : g.instances) {
      o += std::string(" ") + letter + "=" + inst.profile + "@" + std::to_string(inst.start) + " " +
           (inst.foreign ? std::string("(not tessera's)") : inst.pod);
      letter = letter == 'z' ? 'a' : static_cast<char>(letter + 1);
    }
    if (!g.options.empty()) {
      o += "\n      one instance could go:";
      for (const ExplainedOption& opt : g.options) {
        o += " " + opt.profile + " at";
        for (size_t i = 0; i < opt.starts.size(); ++i) {
          o += (i == 0 ? " " : ",") + std::to_string(opt.starts[i]);
        }
        o += ";";
      }
    }
  } else {
    o += "\n      " + std::to_string(g.used_mem) + "/" + std::to_string(g.total_mem) + " MiB, " +
         std::to_string(g.used_cores) + "/" + std::to_string(g.total_cores) + " cores, " +
         std::to_string(g.used) + "/" + std::to_string(g.count) + " tasks";
  }
  if (!g.pods.empty()) o += "\n      held by " + JoinNames(g.pods);
  o += "\n";
}

}  // namespace

std::string FormatExplanation(const Explanation& e) {
  std::string o = "pod " + e.pod + ": ";
  if (!e.error.empty()) return o + "invalid: " + e.error + "\n";
  if (e.passthrough) return o + "asks for no GPU; kube-scheduler places it on its own\n";
  o += e.fits ? "fits on " + JoinNames(e.fitting_nodes) + "\n"
              : "fits nowhere now: " + e.message + "\n";
  size_t detailed = 0;
  for (const NodeExplanation& n : e.nodes) {
    o += "  node " + n.name + ": " + (n.fits ? std::string("fits") : n.reason) + "\n";
    if (!n.detailed) continue;
    ++detailed;
    for (const GpuExplanation& g : n.gpus) FormatGpu(g, &o);
  }
  if (detailed < e.nodes.size()) {
    o += "  (GPUs shown for " + std::to_string(detailed) + " of " + std::to_string(e.nodes.size()) +
         " nodes; name one with --node or node=NAME)\n";
  }
  if (e.fits) return o;
  if (e.never_fits) {
    return o +
           "what would make it fit: nothing running is in the way; no node can hold it even "
           "empty (see each node's reason)\n";
  }
  if (e.remedy) {
    o += "what would make it fit: " + std::to_string(e.remedy->pods.size()) + " pod" +
         (e.remedy->pods.size() == 1 ? "" : "s") + " leaving node " + e.remedy->node + ": " +
         JoinNames(e.remedy->pods) + "\n";
  } else {
    o += "what would make it fit: no set of up to the searched size on one node";
    o += e.search_complete ? " (search complete)\n" : " (search stopped at its budget)\n";
  }
  return o;
}

codec::Json ExplanationToJson(const Explanation& e) {
  using codec::Json;
  Json j{{"pod", e.pod}};
  if (!e.error.empty()) {
    j["error"] = e.error;
    return j;
  }
  j["passthrough"] = e.passthrough;
  j["fits"] = e.fits;
  if (!e.message.empty()) j["message"] = e.message;
  j["fittingNodes"] = e.fitting_nodes;
  Json nodes = Json::array();
  for (const NodeExplanation& n : e.nodes) {
    Json jn{{"name", n.name},
            {"fits", n.fits},
            {"fitsWhenEmpty", n.fits_when_empty},
            {"detailed", n.detailed}};
    if (!n.reason.empty()) jn["reason"] = n.reason;
    Json gpus = Json::array();
    for (const GpuExplanation& g : n.gpus) {
      if (!n.detailed) {
        Json brief{{"index", g.index}, {"uuid", g.uuid}};
        if (!g.reason.empty()) brief["reason"] = g.reason;
        gpus.push_back(std::move(brief));
        continue;
      }
      Json jg{{"index", g.index},
              {"uuid", g.uuid},
              {"type", g.type},
              {"mode", g.mode},
              {"used", g.used},
              {"count", g.count},
              {"usedMemMiB", g.used_mem},
              {"totalMemMiB", g.total_mem},
              {"usedCores", g.used_cores},
              {"totalCores", g.total_cores},
              {"pods", g.pods}};
      if (!g.reason.empty()) jg["reason"] = g.reason;
      if (g.memory_slices > 0) {
        jg["memorySlices"] = g.memory_slices;
        Json inst = Json::array();
        for (const auto& i : g.instances) {
          Json one = {{"pod", i.pod}, {"profile", i.profile}, {"start", i.start}, {"size", i.size}};
          if (i.foreign) one["foreign"] = true;
          inst.push_back(std::move(one));
        }
        jg["instances"] = std::move(inst);
        Json options = Json::array();
        for (const auto& opt : g.options)
          options.push_back({{"profile", opt.profile}, {"starts", opt.starts}});
        jg["options"] = std::move(options);
      }
      gpus.push_back(std::move(jg));
    }
    jn["gpus"] = std::move(gpus);
    nodes.push_back(std::move(jn));
  }
  j["nodes"] = std::move(nodes);
  if (!e.fits) {
    j["neverFits"] = e.never_fits;
    j["searchComplete"] = e.search_complete;
    if (e.remedy) {
      j["remedy"] = {
          {"node", e.remedy->node}, {"pods", e.remedy->pods}, {"freedMemMiB", e.remedy->freed_mem}};
    }
  }
  return j;
}

}  // namespace tessera::sched
