#include <algorithm>
#include <map>
#include <string>
#include <string_view>

#include "core/sched/explain.h"
#include "core/sched/reasons.h"

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

// "CardInsufficientMemory (needs 10000 MiB, 8000 free), CardInsufficientCore (...)"
std::string JoinChecks(const GpuExplanation& g) {
  if (g.checks.empty()) return g.reason;
  std::string out;
  for (const FailedCheck& c : g.checks) {
    out += (out.empty() ? "" : ", ") + c.reason;
    if (!c.detail.empty()) out += " (" + c.detail + ")";
  }
  return out;
}

// "apps/llm-1 (24000 MiB, 40% cores)"
std::string JoinHolders(const GpuExplanation& g) {
  if (g.holders.empty()) return JoinNames(g.pods);
  std::string out;
  for (const GpuHolder& h : g.holders) {
    out += (out.empty() ? "" : ", ") + h.pod;
    if (h.whole) {
      out += " (all of it: its allocation cannot be read)";
    } else {
      out += " (" + std::to_string(h.mem) + " MiB, " + std::to_string(h.cores) + "% cores)";
    }
  }
  return out;
}

void FormatGpu(const GpuExplanation& g, std::string* out) {
  std::string& o = *out;
  o += "    GPU " + std::to_string(g.index) + " " + g.uuid + " (" + g.type + ", " + g.mode + "): ";
  o += g.reason.empty() ? "could take one device" : JoinChecks(g);
  if (g.memory_slices > 0) {
    o += "\n      slices |" + SliceMap(g) + "|";
    char letter = 'a';
    for (const ExplainedInstance& inst : g.instances) {
      o += std::string(" ") + letter + "=" + inst.profile + "@" + std::to_string(inst.start) + "+" +
           std::to_string(inst.size) + " " +
           (inst.foreign ? std::string("(not tessera's)") : inst.pod);
      letter = letter == 'z' ? 'a' : static_cast<char>(letter + 1);
    }
    if (!g.options.empty()) {
      o += "\n      one device could go:";
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
  if (!g.pods.empty()) o += "\n      held by " + JoinHolders(g);
  o += "\n";
}

// "24000 used + 8000 asked = 32000 > 30000 MiB (exceeded by 2000 MiB)"
void FormatQuota(const QuotaExplanation& q, std::string* out) {
  std::string& o = *out;
  o += "  quota of namespace " + q.ns + ":\n";
  for (const QuotaLimitExplanation& l : q.limits) {
    const std::string unit = l.memory ? " MiB" : " cores";
    const int64_t total = l.used + l.request;
    o += "    ResourceQuota " + l.quota + " " + l.key + ": " + std::to_string(l.used) + " used + " +
         std::to_string(l.request) + " asked = " + std::to_string(total) +
         (l.exceeded ? " > " : " <= ") + std::to_string(l.limit) + unit;
    if (l.exceeded) o += " (exceeded by " + std::to_string(total - l.limit) + unit + ")";
    o += "\n";
  }
}

// "free 2000 MiB / 30 cores of namespace apps's quota, or raise it"; where the namespace's pods
// hold less than that, freeing cannot do it: "raise namespace apps's quota by ...".
std::string QuotaRemedy(const QuotaExplanation& q) {
  int64_t used_mem = 0;
  int64_t used_cores = 0;
  for (const QuotaLimitExplanation& l : q.limits) (l.memory ? used_mem : used_cores) = l.used;
  std::string amounts;
  if (q.free_mem > 0) amounts = std::to_string(q.free_mem) + " MiB";
  if (q.free_cores > 0)
    amounts += (amounts.empty() ? "" : " / ") + std::to_string(q.free_cores) + " cores";
  // Both within their limits for the charge worked out, yet a node refused on the quota (its
  // pass counted the pod per GPU): no amount to name.
  if (amounts.empty()) return "free GPU quota of namespace " + q.ns + ", or raise it";
  if (used_mem < q.free_mem || used_cores < q.free_cores) {
    return "raise namespace " + q.ns + "'s quota by " + amounts + " (its pods hold less than that)";
  }
  return "free " + amounts + " of namespace " + q.ns + "'s quota, or raise it";
}

constexpr std::string_view kPasses = "could take one device";

// Per GPU line: its reason, or kPasses.
std::map<std::string, int> GpuCounts(const NodeExplanation& n) {
  std::map<std::string, int> counts;
  for (const GpuExplanation& g : n.gpus)
    counts[g.reason.empty() ? std::string(kPasses) : g.reason]++;
  return counts;
}

// Whether HAMi's node reason already reads like the GPU lines: every GPU fails, and its counts
// are the GPU lines' counts.
bool HamiReasonMatchesGpuLines(const NodeExplanation& n) {
  // A node refused as a whole (unregistered, its device plugin gone) gives each GPU its reason.
  if (n.status.code == NodeStatus::Code::kUnusable) return true;
  if (n.status.devices != static_cast<int32_t>(n.gpus.size())) return false;
  std::map<std::string_view, int32_t> failing;
  for (const GpuExplanation& g : n.gpus) {
    if (g.reason.empty()) return false;
    failing[g.reason]++;
  }
  std::map<std::string_view, int32_t> counted;
  n.status.counts.ForEach([&](Reason r, int32_t count) { counted[ReasonName(r)] = count; });
  return failing == counted;
}

// "3g.20gb", "8000 MiB + 20% cores", or why one device fits no GPU of the model.
std::string OneDevice(const ModelMapping& m, const std::string& model) {
  if (m.mig) {
    return m.possible
               ? m.profile + " on " + model
               : "nothing on " + model + " (no profile holds " + std::to_string(m.mem) + " MiB)";
  }
  std::string share = std::to_string(m.mem) + " MiB";
  if (m.cores > 0) share += " + " + std::to_string(m.cores) + "% cores";
  if (!m.possible) {
    return "nothing on " + model + " (" + share + " is more than its " + std::to_string(m.gpu_mem) +
           " MiB, 100% cores)";
  }
  return share + " on " + model;
}

// "room now, in devices of that size: a 2, b 1; 3 nodes none": at most kRoomListed nodes with
// room are named, the rest counted.
std::string RoomLine(const Explanation& e) {
  constexpr int kRoomListed = 16;
  std::string named;
  int listed = 0, more = 0, none = 0;
  for (const NodeExplanation& n : e.nodes) {
    if (n.room == 0) {
      ++none;
    } else if (listed < kRoomListed) {
      named += (named.empty() ? "" : ", ") + n.name + " " + std::to_string(n.room);
      ++listed;
    } else {
      ++more;
    }
  }
  std::string o =
      "room now, in such devices per node (its GPUs each on its own, the quota aside): ";
  o += named.empty() ? "none anywhere" : named;
  if (more > 0) o += "; " + std::to_string(more) + " more nodes with room";
  if (none > 0 && !named.empty()) {
    o += "; " + std::to_string(none) + (none == 1 ? " node none" : " nodes none");
  }
  return o;
}

bool AnyMigShown(const Explanation& e) {
  for (const NodeExplanation& n : e.nodes) {
    if (!n.detailed) continue;
    for (const GpuExplanation& g : n.gpus) {
      if (g.memory_slices > 0) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<std::string> ShortModelNames(const std::vector<std::string>& types) {
  std::vector<std::string> names;
  names.reserve(types.size());
  for (const std::string& t : types) {
    std::string_view name = t;
    for (const std::string_view vendor : {"NVIDIA ", "NVIDIA-"}) {
      if (name.size() > vendor.size() && name.substr(0, vendor.size()) == vendor) {
        name.remove_prefix(vendor.size());
        break;
      }
    }
    names.emplace_back(name);
  }
  // Two models reading alike once shortened keep their full names.
  std::vector<std::string> out = names;
  for (size_t i = 0; i < names.size(); ++i) {
    for (size_t j = 0; j < names.size(); ++j) {
      if (i != j && names[i] == names[j] && types[i] != types[j]) out[i] = types[i];
    }
  }
  return out;
}

std::string FormatMappings(const Explanation& e) {
  std::string o = e.shown_container.empty() ? std::string("asks for ")
                                            : "container " + e.shown_container + " asks for ";
  const std::string times = std::to_string(e.devices_asked) + " × ";
  if (e.mappings.empty()) {
    return o + std::to_string(e.devices_asked) + (e.devices_asked == 1 ? " device" : " devices") +
           "; no GPU model of the cluster is one the pod allows";
  }
  std::vector<std::string> types;
  types.reserve(e.mappings.size());
  for (const ModelMapping& m : e.mappings) types.push_back(m.gpu_type);
  const std::vector<std::string> models = ShortModelNames(types);
  for (size_t i = 0; i < e.mappings.size(); ++i) {
    if (i > 0) o += ", or ";
    o += (e.mappings[i].possible ? times : std::string()) + OneDevice(e.mappings[i], models[i]);
  }
  if (e.devices_asked > 1) o += ", on one node";
  return o;
}

std::string NodeSummary(const NodeExplanation& n, int devices_asked) {
  if (n.fits) return "fits";
  if (n.gpus.empty()) return FormatNodeStatus(n.status);
  const std::map<std::string, int> counts = GpuCounts(n);
  std::string o = std::to_string(n.gpus.size()) + (n.gpus.size() == 1 ? " GPU: " : " GPUs: ");
  // Passing GPUs first: they are what the node's own verdict is about.
  std::string pieces;
  if (auto it = counts.find(std::string(kPasses)); it != counts.end())
    pieces = std::to_string(it->second) + " " + it->first;
  for (const auto& [why, count] : counts) {
    if (why == kPasses) continue;
    pieces += (pieces.empty() ? "" : ", ") + std::to_string(count) + " " + why;
  }
  o += pieces;
  if (counts.count(std::string(kPasses)) == 0) return o;
  // Some GPUs pass on their own, so the node fails for the request as a whole: say which way,
  // from the words of HAMi's reason that no GPU line carries.
  const auto names = [&](Reason r) {
    return n.status.counts[r] > 0 && counts.count(std::string(ReasonName(r))) == 0;
  };
  const std::string asked =
      std::to_string(devices_asked) + " device" + (devices_asked == 1 ? "" : "s");
  if (names(Reason::kResourceQuotaNotFit)) {
    o += "; together past the namespace's GPU quota";
  } else if (names(Reason::kNumaNotFit)) {
    o += "; not " + asked + " on one NUMA node";
  } else if (names(Reason::kCardMigTopologyInfeasible) ||
             names(Reason::kCardMigSlicesHeldByForeignInstances)) {
    o += "; the " + asked + " do not all fit on the free slices together";
  } else {
    o += "; too few for the " + asked + " asked";
  }
  return o;
}

namespace {

// What would make the pod fit, on one line; empty when it fits.
std::string RemedyLine(const Explanation& e) {
  if (e.fits) return {};
  std::string o = "what would make it fit: ";
  if (e.quota && e.quota->blocks) {
    // The quota, not a node, keeps it out: the pods the search found free quota, wherever they
    // run, and the pod may then go to another node.
    o += QuotaRemedy(*e.quota);
    if (e.remedy) {
      o += " (" + JoinNames(e.remedy->pods) +
           (e.remedy->pods.size() == 1 ? " leaving does" : " leaving do") + ")";
    }
    return o + "\n";
  }
  if (e.never_fits) {
    return o +
           "nothing running is in the way; no node can hold it even empty (see each node's "
           "reason)\n";
  }
  if (e.remedy) {
    return o + std::to_string(e.remedy->pods.size()) + " pod" +
           (e.remedy->pods.size() == 1 ? "" : "s") + " leaving node " + e.remedy->node + ": " +
           JoinNames(e.remedy->pods) + "\n";
  }
  o += "no set of up to the searched size on one node";
  return o + (e.search_complete ? " (search complete)\n" : " (search stopped at its budget)\n");
}

}  // namespace

std::string FormatExplanation(const Explanation& e) {
  std::string o = "pod " + e.pod + ": ";
  if (!e.error.empty()) return o + "invalid: " + e.error + "\n";
  if (e.passthrough) return o + "asks for no GPU; kube-scheduler places it on its own\n";
  o += e.fits ? "fits on " + JoinNames(e.fitting_nodes) + "\n"
              : "fits nowhere now: " + e.message + "\n";
  // The summary first: what the request is on each model, where there is room, the remedy.
  o += "  " + FormatMappings(e) + "\n";
  o += "  " + RoomLine(e) + "\n";
  o += RemedyLine(e);
  for (const NearMiss& miss : e.near_misses) o += "  near miss: " + FormatNearMiss(miss) + "\n";
  if (!e.fits && e.quota) FormatQuota(*e.quota, &o);
  size_t detailed = 0;
  for (const NodeExplanation& n : e.nodes) {
    if (n.fits || n.gpus.empty() || HamiReasonMatchesGpuLines(n)) {
      o += "  node " + n.name + ": " + (n.fits ? std::string("fits") : FormatNodeStatus(n.status)) +
           "\n";
    } else {
      // HAMi's reason counts GPU visits; the summary counts the GPU lines below.
      o += "  node " + n.name + ": " + NodeSummary(n, e.devices_asked) + "\n";
      o += "    (HAMi's reason, counting GPU visits: " + FormatNodeStatus(n.status) + ")\n";
    }
    if (!n.detailed) continue;
    ++detailed;
    for (const GpuExplanation& g : n.gpus) FormatGpu(g, &o);
  }
  if (detailed < e.nodes.size()) {
    o += "  (GPUs shown for " + std::to_string(detailed) + " of " + std::to_string(e.nodes.size()) +
         " nodes; name one with --node or node=NAME)\n";
  }
  if (AnyMigShown(e)) {
    o += "  (slices: one character per memory slice, a letter per instance, . free; "
         "profile@start+size: the instance's first slice and how many it spans)\n";
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
  if (!e.near_misses.empty()) {
    Json misses = Json::array();
    for (const NearMiss& miss : e.near_misses) {
      Json one{{"container", miss.container},           {"gpuType", miss.gpu_type},
               {"requestedMemMiB", miss.requested_mib}, {"nearestProfile", miss.nearest_profile},
               {"nearestMemMiB", miss.nearest_mib},     {"hint", FormatNearMiss(miss)}};
      if (!miss.taken_profile.empty()) {
        one["takenProfile"] = miss.taken_profile;
        one["takenMemMiB"] = miss.taken_mib;
      }
      misses.push_back(std::move(one));
    }
    j["nearMisses"] = std::move(misses);
  }
  Json by_model = Json::array();
  for (const ModelMapping& m : e.mappings) {
    Json one{{"gpuType", m.gpu_type}, {"mig", m.mig}, {"possible", m.possible}, {"memMiB", m.mem}};
    if (m.mig && !m.profile.empty()) one["profile"] = m.profile;
    if (!m.mig) one["cores"] = m.cores;
    by_model.push_back(std::move(one));
  }
  Json asks{{"devices", e.devices_asked}, {"summary", FormatMappings(e)}, {"byModel", by_model}};
  if (!e.shown_container.empty()) asks["container"] = e.shown_container;
  j["asks"] = std::move(asks);
  Json nodes = Json::array();
  for (const NodeExplanation& n : e.nodes) {
    Json jn{{"name", n.name},
            {"fits", n.fits},
            {"room", n.room},
            {"fitsWhenEmpty", n.fits_when_empty},
            {"detailed", n.detailed}};
    if (!n.fits) {
      if (std::string why = FormatNodeStatus(n.status); !why.empty()) jn["reason"] = std::move(why);
    }
    if (!n.fits && !n.gpus.empty()) {
      jn["summary"] = NodeSummary(n, e.devices_asked);
      Json counts = Json::object();
      for (const auto& [why, count] : GpuCounts(n)) counts[why == kPasses ? "passes" : why] = count;
      jn["gpuCounts"] = std::move(counts);
    }
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
      if (!g.checks.empty()) {
        Json checks = Json::array();
        for (const FailedCheck& c : g.checks)
          checks.push_back({{"reason", c.reason}, {"detail", c.detail}});
        jg["checks"] = std::move(checks);
      }
      Json holders = Json::array();
      for (const GpuHolder& h : g.holders) {
        Json one{{"pod", h.pod}, {"memMiB", h.mem}, {"cores", h.cores}};
        if (h.whole) one["whole"] = true;
        holders.push_back(std::move(one));
      }
      jg["holders"] = std::move(holders);
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
    if (e.quota) {
      Json limits = Json::array();
      for (const QuotaLimitExplanation& l : e.quota->limits) {
        limits.push_back({{"quota", l.quota},
                          {"key", l.key},
                          {"unit", l.memory ? "MiB" : "cores"},
                          {"limit", l.limit},
                          {"used", l.used},
                          {"request", l.request},
                          {"exceeded", l.exceeded}});
      }
      Json quota{{"namespace", e.quota->ns}, {"blocks", e.quota->blocks}, {"limits", limits}};
      if (e.quota->free_mem > 0) quota["freeMemMiB"] = e.quota->free_mem;
      if (e.quota->free_cores > 0) quota["freeCores"] = e.quota->free_cores;
      if (e.quota->blocks) quota["remedy"] = QuotaRemedy(*e.quota);
      j["quota"] = std::move(quota);
    }
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
