#include "core/sched/defrag_format.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <string_view>

namespace tessera::sched {
namespace {

std::string Fixed(double value, int digits) {
  std::array<char, 64> buffer{};
  const auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                          std::chars_format::fixed, digits);
  if (error != std::errc{}) return "?";
  std::string out(buffer.data(), end);
  return out == "-0.00" ? "0.00" : out;
}

}  // namespace

std::string_view DefragModeName(DefragPlan::Mode mode) {
  switch (mode) {
    case DefragPlan::Mode::kAdmitPending:
      return "admit-pending";
    case DefragPlan::Mode::kRaisePlaceability:
      return "raise-placeability";
    case DefragPlan::Mode::kNothing:
      break;
  }
  return "nothing";
}

namespace {

std::string Plural(size_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

// "GPU-x 1g.24gb@3+3" or "GPU-x 8000 MiB 30% cores"
std::string Device(const std::string& uuid, int32_t mem, int32_t cores, const std::string& profile,
                   const model::Placement& placement) {
  if (!profile.empty()) {
    return uuid + " " + profile + "@" + std::to_string(placement.start) + "+" +
           std::to_string(placement.size);
  }
  return uuid + " " + std::to_string(mem) + " MiB " + std::to_string(cores) + "% cores";
}

std::string Freed(const std::vector<FreedDevice>& devices) {
  std::string out;
  for (const FreedDevice& d : devices) {
    out += (out.empty() ? "" : ", ") + Device(d.uuid, d.mem, d.cores, d.mig_profile, d.placement);
  }
  return out;
}

std::string Granted(const std::vector<GrantedDevice>& devices) {
  std::string out;
  for (const GrantedDevice& d : devices) {
    out += (out.empty() ? "" : ", ") + Device(d.uuid, d.mem, d.cores, d.mig_profile, d.placement);
  }
  return out;
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// "2.50 GiB of MIG placeability, 0.25 GPUs less sharing fragmentation", naming only what moves.
std::string Gains(const DefragStep& s) {
  std::string out;
  if (Fixed(s.placeability_gain, 2) != "0.00") {
    out = Fixed(s.placeability_gain, 2) + " GiB of MIG placeability";
  }
  if (Fixed(s.fragmentation_drop, 2) != "0.00") {
    out += (out.empty() ? "" : ", ") + Fixed(s.fragmentation_drop, 2) +
           " GPUs less sharing fragmentation";
  }
  return out.empty() ? "less than 0.01 in either measure" : out;
}

codec::Json DeviceJson(const std::string& uuid, int32_t mem, int32_t cores,
                       const std::string& profile, const model::Placement& placement) {
  codec::Json j = {{"uuid", uuid}, {"memMiB", mem}, {"cores", cores}};
  if (!profile.empty()) {
    j["profile"] = profile;
    j["start"] = placement.start;
    j["size"] = placement.size;
  }
  return j;
}

codec::Json MeasuresJson(const ClusterMeasures& m) {
  return {{"migPlaceabilityGiB", m.mig_placeability},
          {"sharingFragmentationGpus", m.sharing_fragmentation}};
}

// Lists longer than this are cut in the text, with a count of the rest.
constexpr size_t kMaxListed = 16;

}  // namespace

std::string FormatDefragPlan(const DefragPlan& plan, bool to_execute) {
  std::string out =
      to_execute ? "defrag plan (to be executed): " : "defrag plan (dry run, nothing is evicted): ";
  size_t admitted_by_eviction = 0;
  for (const AdmittedPod& a : plan.admitted) admitted_by_eviction += a.evicted.empty() ? 0 : 1;
  switch (plan.mode) {
    case DefragPlan::Mode::kAdmitPending:
      out += Plural(plan.steps.size(), "eviction") + ", admitting " +
             Plural(admitted_by_eviction, "pending pod") + "\n";
      break;
    case DefragPlan::Mode::kRaisePlaceability:
      out += Plural(plan.steps.size(), "move") + ", raising placeability\n";
      break;
    case DefragPlan::Mode::kNothing:
      out += "nothing to do: " + plan.why_empty + "\n";
      break;
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const DefragStep& s = plan.steps[i];
    out += "  " + std::to_string(i + 1) + ". evict " + s.pod + " from node " + s.node + ": frees " +
           Freed(s.frees);
    out += s.frees.size() > 1 ? " (" + std::to_string(s.freed_mem) + " MiB in all)\n" : "\n";
    out += "     placed again on node " + s.replaced_node + ": " + Granted(s.replaced_on) + "\n";
    if (!s.admits.empty()) {
      out += "     makes room for " + s.admits + "\n";
    } else {
      out += "     gains " + Gains(s) + "\n";
    }
  }
  for (const AdmittedPod& a : plan.admitted) {
    out += "admitted: " + a.pod + " on node " + a.node + " (" + Granted(a.devices) + ")";
    out += a.evicted.empty() ? ", with no eviction of its own\n"
                             : " after evicting " + Join(a.evicted) + "\n";
  }
  for (const auto& [pod, why] : plan.not_admitted)
    out += "not admitted: " + pod + ": " + why + "\n";
  out += "MIG placeability: " + Fixed(plan.before.mig_placeability, 2) + " -> " +
         Fixed(plan.after.mig_placeability, 2) +
         " GiB; sharing fragmentation: " + Fixed(plan.before.sharing_fragmentation, 2) + " -> " +
         Fixed(plan.after.sharing_fragmentation, 2) + " GPUs\n";
  out += "limits: at most " +
         Plural(static_cast<size_t>(std::max(0, plan.limits.max_evictions)), "eviction") +
         "; a move gains at least " + Fixed(plan.limits.min_gain, 2) + " GiB or " +
         Fixed(plan.limits.min_fragmentation_drop, 2) + " GPUs; " +
         std::to_string(plan.evaluations) + " evaluations" +
         (plan.search_complete ? "" : " (budget reached: the search is not complete)") + "\n";
  if (!plan.unmovable.empty()) {
    out += "not movable: " + Plural(plan.unmovable.size(), "pod") + "\n";
    size_t listed = 0;
    for (const auto& [pod, why] : plan.unmovable) {
      if (listed++ == kMaxListed) {
        out += "  and " + std::to_string(plan.unmovable.size() - kMaxListed) + " more\n";
        break;
      }
      out += "  " + pod + ": " + why + "\n";
    }
  }
  return out;
}

codec::Json DefragPlanToJson(const DefragPlan& plan) {
  codec::Json steps = codec::Json::array();
  for (const DefragStep& s : plan.steps) {
    codec::Json frees = codec::Json::array();
    for (const FreedDevice& d : s.frees) {
      frees.push_back(DeviceJson(d.uuid, d.mem, d.cores, d.mig_profile, d.placement));
    }
    codec::Json again = codec::Json::array();
    for (const GrantedDevice& d : s.replaced_on) {
      again.push_back(DeviceJson(d.uuid, d.mem, d.cores, d.mig_profile, d.placement));
    }
    codec::Json step = {{"pod", s.pod},
                        {"node", s.node},
                        {"frees", frees},
                        {"freedMemMiB", s.freed_mem},
                        {"replacedNode", s.replaced_node},
                        {"replacedOn", again}};
    if (!s.admits.empty()) {
      step["admits"] = s.admits;
    } else {
      step["placeabilityGainGiB"] = s.placeability_gain;
      step["fragmentationDropGpus"] = s.fragmentation_drop;
    }
    steps.push_back(std::move(step));
  }
  codec::Json admitted = codec::Json::array();
  for (const AdmittedPod& a : plan.admitted) {
    codec::Json devices = codec::Json::array();
    for (const GrantedDevice& d : a.devices) {
      devices.push_back(DeviceJson(d.uuid, d.mem, d.cores, d.mig_profile, d.placement));
    }
    admitted.push_back(
        {{"pod", a.pod}, {"node", a.node}, {"devices", devices}, {"evicted", a.evicted}});
  }
  codec::Json out = {{"dryRun", true},
                     {"mode", DefragModeName(plan.mode)},
                     {"steps", steps},
                     {"admitted", admitted},
                     {"notAdmitted", plan.not_admitted},
                     {"unmovable", plan.unmovable},
                     {"before", MeasuresJson(plan.before)},
                     {"after", MeasuresJson(plan.after)},
                     {"limits",
                      {{"maxEvictions", plan.limits.max_evictions},
                       {"minGainGiB", plan.limits.min_gain},
                       {"minFragmentationDropGpus", plan.limits.min_fragmentation_drop},
                       {"maxEvaluations", plan.limits.max_evaluations}}},
                     {"evaluations", plan.evaluations},
                     {"searchComplete", plan.search_complete}};
  if (plan.steps.empty()) out["whyEmpty"] = plan.why_empty;
  return out;
}

}  // namespace tessera::sched
