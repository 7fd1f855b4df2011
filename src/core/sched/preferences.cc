#include "core/sched/preferences.h"

#include <algorithm>
#include <set>

#include "core/common/strings.h"
#include "core/model/annotations.h"
#include "core/model/uuid_bits.h"

namespace tessera::sched {

namespace ann = model::annotations;

bool GpuPolicy::IsChain() const {
  return tokens.size() > 1 || (tokens.size() == 1 && tokens[0] == "numa");
}

std::vector<std::string> GpuPolicy::Chain(bool numa_bind) const {
  std::vector<std::string> chain;
  for (const auto& t : tokens) {
    if ((t == "binpack" || t == "spread" || t == "numa") &&
        std::find(chain.begin(), chain.end(), t) == chain.end()) {
      chain.push_back(t);
    }
  }
  if (chain.empty()) chain.push_back("spread");
  if (numa_bind && chain.front() != "numa") {
    chain.erase(std::remove(chain.begin(), chain.end(), "numa"), chain.end());
    chain.insert(chain.begin(), "numa");
  }
  return chain;
}

Result<GpuPolicy> ParseGpuPolicy(const std::string& text) {
  static const std::set<std::string> kKnown = {"tessera", "binpack",        "spread",
                                               "numa",    "topology-aware", "mutex"};
  GpuPolicy policy;
  auto tokens = SplitTrimmed(text, ',');
  if (tokens.empty()) return Error{"empty GPU scheduler policy"};
  for (const auto& t : tokens) {
    if (kKnown.count(t) == 0) {
      return Error{"unknown GPU scheduler policy \"" + t +
                   "\" (expected tessera, binpack, spread, numa, topology-aware or mutex)"};
    }
    if (t == "tessera") {
      policy.tessera = true;
      continue;
    }
    if (t == "mutex") policy.mutex = true;
    if (t == "topology-aware") policy.topology_aware = true;
    policy.tokens.push_back(t);
  }
  return policy;
}

Result<ScoringWeights> ParseScoringWeights(const std::string& text) {
  auto fail = [&](const std::string& why) {
    return Error{"invalid hami.io/device-scoring-weights annotation \"" + text + "\": " + why};
  };
  auto parts = SplitKeepEmpty(text, ',');
  if (parts.size() != 3) return fail("expected exactly slot=<n>,core=<n>,memory=<n>");
  ScoringWeights w{0, 0, 0};
  std::set<std::string> seen;
  for (const auto& raw : parts) {
    std::string part = Trim(raw);
    size_t eq = part.find('=');
    if (eq == std::string::npos) return fail("\"" + part + "\" has no '='");
    std::string key = Trim(part.substr(0, eq));
    std::string value = Trim(part.substr(eq + 1));
    if (!seen.insert(key).second) return fail("duplicate \"" + key + "\" weight");
    long long v = 0;
    if (!ParseInt64(value, &v)) {
      if (!value.empty() && value[0] == '-')
        return fail("\"" + key + "\" weight must not be negative");
      return fail("\"" + key + "\" weight \"" + value + "\" is not an integer");
    }
    if (v < 0) return fail("\"" + key + "\" weight must not be negative");
    if (key == "slot") {
      w.slot = v;
    } else if (key == "core") {
      w.core = v;
    } else if (key == "memory") {
      w.memory = v;
    } else {
      return fail("unknown weight \"" + key + "\" (expected slot, core, memory)");
    }
  }
  if (w.slot == 0 && w.core == 0 && w.memory == 0) return fail("all weights are zero");
  return w;
}

std::string_view ToString(VgpuMode mode) {
  switch (mode) {
    case VgpuMode::kAny:
      return "";
    case VgpuMode::kMig:
      return "mig";
    case VgpuMode::kHamiCore:
      return "hami-core";
    case VgpuMode::kMps:
      return "mps";
  }
  return "";
}

bool ModeAdmits(VgpuMode vgpu_mode, std::string_view device_mode) {
  return vgpu_mode == VgpuMode::kAny || ToString(vgpu_mode).find(device_mode) != std::string::npos;
}

Result<VgpuMode> ParseVgpuMode(const model::Pod& pod) {
  const std::string* v = pod.Annotation(std::string(model::annotations::kVgpuMode));
  if (v == nullptr) return VgpuMode::kAny;
  const std::string mode = Trim(*v);
  for (VgpuMode m : {VgpuMode::kMig, VgpuMode::kHamiCore, VgpuMode::kMps}) {
    if (mode == ToString(m)) return m;
  }
  return Error{"pod " + pod.Key() + ": annotation nvidia.com/vgpu-mode: unknown mode \"" + *v +
               "\" (expected mig, hami-core or mps)"};
}

Result<PodPreferences> ParsePreferences(const model::Pod& pod, const PolicyDefaults& defaults) {
  PodPreferences p;
  auto annotation = [&](std::string_view key) { return pod.Annotation(std::string(key)); };
  if (auto* v = annotation(ann::kUseGpuType)) {
    for (auto& t : SplitTrimmed(*v, ',')) p.use_types.push_back(ToUpper(t));
  }
  if (auto* v = annotation(ann::kNoUseGpuType)) {
    for (auto& t : SplitTrimmed(*v, ',')) p.nouse_types.push_back(ToUpper(t));
  }
  if (auto* v = annotation(ann::kUseGpuUuid)) p.use_uuids = SplitTrimmed(*v, ',');
  if (auto* v = annotation(ann::kNoUseGpuUuid)) p.nouse_uuids = SplitTrimmed(*v, ',');
  for (const auto* list : {&p.use_uuids, &p.nouse_uuids}) {
    for (const std::string& uuid : *list) p.named_uuid_bits.push_back(model::UuidBits(uuid));
  }
  auto mode = ParseVgpuMode(pod);
  if (!mode.ok()) return mode.error();
  p.vgpu_mode = mode.value();
  if (auto* v = annotation(ann::kNumaBind)) {
    bool b = false;
    p.numa_bind = ParseGoBool(*v, &b) && b;  // untrimmed, as HAMi's strconv.ParseBool
  }
  p.node_policy = defaults.node;
  if (auto* v = annotation(ann::kNodePolicy)) {
    auto np = ParseNodePolicy(*v, defaults.defined_node_policies);
    if (!np.ok()) {
      return Error{"pod " + pod.Key() +
                   ": annotation hami.io/node-scheduler-policy: " + np.error().message};
    }
    p.node_policy = *np;
  }
  std::string gpu_policy = defaults.gpu;
  bool from_annotation = false;
  if (auto* v = annotation(ann::kGpuPolicy)) {
    gpu_policy = *v;
    from_annotation = true;
  }
  auto gp = ParseGpuPolicy(gpu_policy);
  if (!gp.ok()) {
    return Error{
        "pod " + pod.Key() + ": " +
        (from_annotation ? "annotation hami.io/gpu-scheduler-policy: " : "default GPU policy: ") +
        gp.error().message};
  }
  p.gpu_policy = gp.value();
  if (auto* v = annotation(ann::kScoringWeights)) {
    auto w = ParseScoringWeights(*v);
    if (!w.ok()) return Error{"pod " + pod.Key() + ": " + w.error().message};
    p.weights = *w;
  }
  return p;
}

}  // namespace tessera::sched
