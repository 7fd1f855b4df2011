#include "core/node/registration.h"

#include <algorithm>

#include "core/node/profile_names.h"

namespace tessera::node {

namespace {

// The allowlist entry of a GPU: the first whose models contain a substring of its name.
const std::vector<std::string>* AllowedProfiles(const NodeDeviceConfig& config,
                                                const std::string& name) {
  for (const auto& entry : config.mig_profile_allowlist) {
    for (const auto& m : entry.models) {
      if (!m.empty() && name.find(m) != std::string::npos) return &entry.profiles;
    }
  }
  return nullptr;
}

// HAMi maps an allowlist name to the base profile of its slice count ("3g.anything" -> the
// 3_SLICE enum); tessera first looks for the exact name, so "+me" and REV2 profiles work too.
const DriverMigProfile* ProfileForName(const DriverGpu& gpu, const std::string& name) {
  for (const auto& p : gpu.mig_profiles) {
    if (p.name == name) return &p;
  }
  if (name.find_first_of("+-") != std::string::npos) return nullptr;
  const size_t g = name.find('g');
  if (g == std::string::npos || g == 0) return nullptr;
  const std::string slices = name.substr(0, g);
  for (const auto& p : gpu.mig_profiles) {
    if (p.nvml_enum <= 6 && std::to_string(GpuInstanceSlices(p.nvml_enum)) == slices) return &p;
  }
  return nullptr;
}

model::MigProfile Published(const DriverMigProfile& p, const std::string& name, uint32_t max_sm) {
  model::MigProfile out;
  out.name = name;
  out.memory_mib = static_cast<int32_t>(p.memory_mib);
  out.core = max_sm == 0 ? 0 : static_cast<int32_t>((100 * p.sm_count + max_sm - 1) / max_sm);
  out.slice_count = p.slice_count;
  out.placements = p.placements;
  out.max_count = static_cast<int32_t>(p.instance_count);
  return out;
}

}  // namespace

std::optional<MigFallback> ParseMigFallback(const std::string& text) {
  if (text == "none") return MigFallback::kNone;
  if (text == "hami-core") return MigFallback::kHamiCore;
  return std::nullopt;
}

std::string RegisteredType(const std::string& nvml_name) {
  return nvml_name.rfind("NVIDIA", 0) == 0 ? nvml_name : "NVIDIA-" + nvml_name;
}

Registration BuildRegistration(const RegistrationInput& input, const NodeDeviceConfig& config) {
  Registration out;
  std::vector<const DriverGpu*> gpus;
  for (const auto& g : input.gpus) gpus.push_back(&g);
  std::sort(gpus.begin(), gpus.end(), [](auto* a, auto* b) { return a->index < b->index; });
  for (const DriverGpu* gpu : gpus) {
    if (config.filter_uuids.count(gpu->uuid) > 0 || config.filter_indexes.count(gpu->index) > 0) {
      continue;  // filterdevices: neither registered nor advertised
    }
    model::GpuDevice d;
    d.uuid = gpu->uuid;
    d.index = gpu->index;
    d.type = RegisteredType(gpu->name);
    auto numa = input.numa.find(gpu->uuid);
    d.numa = numa == input.numa.end() ? 0 : std::max(0, numa->second);
    d.healthy = input.unhealthy.count(gpu->uuid) == 0;
    const bool mig_node = config.operating_mode == "mig";
    if (gpu->mig_enabled && !mig_node) {
      out.notes.push_back(gpu->uuid + ": MIG is enabled but the node's operating mode is \"" +
                          config.operating_mode + "\"; left out (a shared GPU cannot run on it)");
      continue;
    }
    if (mig_node && gpu->mig_capable && !gpu->mig_enabled) {
      // Not silently shared (issue 38 G): reported, and registered as the fallback says.
      const bool shared = config.mig_fallback == MigFallback::kHamiCore;
      out.mig_mode_off.push_back({gpu->uuid, gpu->index, gpu->mig_pending_enabled, shared});
      const std::string state =
          gpu->mig_pending_enabled ? "is pending until a GPU reset or reboot" : "is off";
      out.notes.push_back(gpu->uuid + ": the node's operating mode is \"mig\" but MIG mode " +
                          state +
                          (shared ? "; shared with HAMi-core (migFallback: hami-core)"
                                  : "; left out (migFallback: none)"));
      if (!shared) continue;
    }
    if (mig_node && gpu->mig_enabled) {
      d.mode = "mig";
      d.total_mem_mib = static_cast<int32_t>(gpu->memory_mib);
      d.total_cores = 100;
      uint32_t max_sm = 0;
      for (const auto& p : gpu->mig_profiles) max_sm = std::max(max_sm, p.sm_count);
      if (!config.mig_profile_allowlist.empty()) {
        // An allowlist that does not cover the model allows nothing on it, as in HAMi.
        const auto* allowed = AllowedProfiles(config, gpu->name);
        for (const auto& name : allowed != nullptr ? *allowed : std::vector<std::string>{}) {
          if (const DriverMigProfile* p = ProfileForName(*gpu, name)) {
            d.mig_profiles.push_back(Published(*p, name, max_sm));
          }
        }
      } else {
        for (const auto& p : gpu->mig_profiles)
          d.mig_profiles.push_back(Published(p, p.name, max_sm));
      }
      for (const auto& p : d.mig_profiles) d.count = std::max(d.count, p.max_count);
      if (d.mig_profiles.empty()) {
        out.notes.push_back(gpu->uuid + ": no MIG profile is allowed for \"" + gpu->name +
                            "\" by migProfileAllowlist; left out");
        continue;
      }
    } else {
      // A GPU that cannot run MIG on a "mig" node is shared the HAMi-core way, and so is one
      // whose MIG mode is off when the fallback says so.
      d.mode = mig_node ? "hami-core" : config.operating_mode;
      d.count = config.device_split_count;
      int64_t mem = static_cast<int64_t>(gpu->memory_mib);
      if (mem == 0) mem = config.pre_configured_device_memory;
      if (mem == 0) {
        out.notes.push_back(gpu->uuid +
                            ": NVML reports no memory size and preConfiguredDeviceMemory is 0; "
                            "left out");
        continue;
      }
      if (config.device_memory_scaling != 1.0) {
        mem = static_cast<int64_t>(static_cast<double>(mem) * config.device_memory_scaling);
      }
      d.total_mem_mib = static_cast<int32_t>(mem);
      d.total_cores = static_cast<int32_t>(config.device_core_scaling * 100);
    }
    out.devices.push_back(std::move(d));
  }
  return out;
}

}  // namespace tessera::node
