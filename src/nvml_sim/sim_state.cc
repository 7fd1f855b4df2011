#include "nvml_sim/sim_state.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "adapters/files/atomic_write.h"
#include "adapters/nvml/nvml_api.h"
#include "core/codec/json_util.h"
#include "core/model/device.h"

namespace tessera::nvml_sim {

namespace {

using codec::Json;

std::string DefaultName(const mig::GpuModelSpec& model) {
  for (const auto& alias : model.aliases) {
    if (alias.rfind("NVIDIA ", 0) == 0) return alias;
  }
  return "NVIDIA " + model.model;
}

Status ReadInstances(const Json& gj, const std::string& where, SimGpu* gpu) {
  const Json* gis = codec::FindKey(gj, "gpuInstances");
  if (gis == nullptr || gis->is_null()) return Status::Ok();
  if (!gis->is_array()) return Error{where + ".gpuInstances: expected an array"};
  for (size_t i = 0; i < gis->size(); ++i) {
    const Json& ij = (*gis)[i];
    const std::string iw = where + ".gpuInstances[" + std::to_string(i) + "]";
    SimGpuInstance gi;
    std::string profile;
    if (auto s = codec::ReadString(ij, "profile", iw, &profile); !s) return s;
    if (auto s = codec::ReadIntAs(ij, "id", iw, 0, 1 << 20, &gi.id); !s) return s;
    if (auto s = codec::ReadIntAs(ij, "start", iw, 0, 64, &gi.start); !s) return s;
    if (auto s = codec::ReadIntAs(ij, "size", iw, 1, 64, &gi.size); !s) return s;
    for (size_t p = 0; p < gpu->model->profiles.size(); ++p) {
      if (gpu->model->profiles[p].name == profile) gi.profile = static_cast<int>(p);
    }
    if (gi.profile < 0) return Error{iw + ".profile: unknown profile \"" + profile + "\""};
    if (const Json* cis = codec::FindKey(ij, "computeInstances"); cis && cis->is_array()) {
      for (size_t c = 0; c < cis->size(); ++c) {
        const std::string cw = iw + ".computeInstances[" + std::to_string(c) + "]";
        SimComputeInstance ci;
        const Json& cj = (*cis)[c];
        if (auto s = codec::ReadIntAs(cj, "id", cw, 0, 1 << 20, &ci.id); !s) return s;
        if (auto s = codec::ReadIntAs(cj, "profileId", cw, 0, 64, &ci.profile_id); !s) return s;
        if (auto s = codec::ReadIntAs(cj, "processes", cw, 0, 1 << 20, &ci.processes); !s) {
          return s;
        }
        if (auto s = codec::ReadString(cj, "uuid", cw, &ci.mig_uuid); !s) return s;
        if (codec::FindKey(cj, "memoryUsedMiB") != nullptr) {
          uint64_t used = 0;
          if (auto s = codec::ReadIntAs(cj, "memoryUsedMiB", cw, 0, 1LL << 32, &used); !s) {
            return s;
          }
          ci.memory_used_mib = used;
        }
        auto slices = ComputeSlicesOf(ci.profile_id);
        if (!slices) return Error{cw + ".profileId: not a compute-instance profile"};
        ci.slice_count = *slices;
        gi.compute_instances.push_back(ci);
      }
    }
    gpu->gpu_instances.push_back(std::move(gi));
  }
  return Status::Ok();
}

Result<SimGpu> ReadGpu(const Json& gj, const std::string& where,
                       const mig::GpuModelCatalog& catalog, size_t index) {
  SimGpu gpu;
  std::string model_name;
  if (auto s = codec::ReadString(gj, "uuid", where, &gpu.uuid); !s) return Error{s.message()};
  if (auto s = codec::ReadString(gj, "model", where, &model_name); !s) return Error{s.message()};
  if (auto s = codec::ReadString(gj, "name", where, &gpu.name); !s) return Error{s.message()};
  if (auto s = codec::ReadString(gj, "pciBusId", where, &gpu.pci_bus_id); !s) {
    return Error{s.message()};
  }
  if (auto s = codec::ReadIntAs(gj, "memoryMiB", where, 0, 1LL << 32, &gpu.memory_mib); !s) {
    return Error{s.message()};
  }
  if (auto s = codec::ReadBool(gj, "migMode", where, &gpu.mig_enabled); !s) {
    return Error{s.message()};
  }
  gpu.mig_pending_enabled = gpu.mig_enabled;  // no change pending unless the file says so
  if (auto s = codec::ReadBool(gj, "migModePending", where, &gpu.mig_pending_enabled); !s) {
    return Error{s.message()};
  }
  if (auto s = codec::ReadIntAs(gj, "processes", where, 0, 1 << 20, &gpu.processes); !s) {
    return Error{s.message()};
  }
  if (codec::FindKey(gj, "utilization") != nullptr) {
    uint32_t util = 0;
    if (auto s = codec::ReadIntAs(gj, "utilization", where, 0, 100, &util); !s) {
      return Error{s.message()};
    }
    gpu.utilization = util;
  }
  if (codec::FindKey(gj, "memoryUsedMiB") != nullptr) {
    uint64_t used = 0;
    if (auto s = codec::ReadIntAs(gj, "memoryUsedMiB", where, 0, 1LL << 32, &used); !s) {
      return Error{s.message()};
    }
    gpu.memory_used_mib = used;
  }
  if (gpu.uuid.empty()) return Error{where + ".uuid: missing"};
  if (!model_name.empty()) {
    gpu.model = catalog.Find(model_name);
    if (gpu.model == nullptr) {
      return Error{where + ".model: \"" + model_name + "\" is not in the built-in MIG table"};
    }
    for (const auto& hw : gpu.model->hardware) {
      if (hw.nvml_id < 0 || hw.nvml_enum < 0) {
        return Error{where + ".model: \"" + model_name +
                     "\" has profiles without NVML ids in the built-in table"};
      }
    }
    if (gpu.name.empty()) gpu.name = DefaultName(*gpu.model);
    if (gpu.memory_mib == 0) gpu.memory_mib = static_cast<uint64_t>(gpu.model->memory_mib);
  }
  if (gpu.name.empty()) return Error{where + ".name: required for a GPU without a MIG model"};
  if (gpu.memory_mib == 0) return Error{where + ".memoryMiB: required without a MIG model"};
  if (gpu.pci_bus_id.empty()) {
    char bus[32];
    std::snprintf(bus, sizeof bus, "00000000:%02zX:00.0", 0x10 + index);
    gpu.pci_bus_id = bus;
  }
  if (gpu.model == nullptr) {
    gpu.mig_enabled = false;
    gpu.mig_pending_enabled = false;
  } else if (auto s = ReadInstances(gj, where, &gpu); !s) {
    return Error{s.message()};
  }
  return gpu;
}

}  // namespace

Result<SimState> LoadState(const std::string& path, const mig::GpuModelCatalog& catalog) {
  std::ifstream in(path);
  if (!in) return Error{"simulated NVML: cannot read state file " + path};
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = codec::ParseJson(text.str(), "simulated NVML state " + path);
  if (!parsed.ok()) return parsed.error();
  const Json& root = parsed.value();
  const std::string where = "simulated NVML state " + path;
  const Json* gpus = codec::FindKey(root, "gpus");
  if (gpus == nullptr || !gpus->is_array()) return Error{where + ".gpus: expected an array"};
  SimState state;
  if (auto s = codec::ReadIntAs(root, "nextSerial", where, 1, 1LL << 62, &state.next_serial); !s) {
    return Error{s.message()};
  }
  if (auto s = codec::ReadIntAs(root, "usageSeed", where, 0, 1LL << 62, &state.usage_seed); !s) {
    return Error{s.message()};
  }
  for (size_t i = 0; i < gpus->size(); ++i) {
    auto gpu = ReadGpu((*gpus)[i], where + ".gpus[" + std::to_string(i) + "]", catalog, i);
    if (!gpu.ok()) return gpu.error();
    state.gpus.push_back(std::move(gpu.value()));
  }
  return state;
}

Status SaveState(const std::string& path, const SimState& state) {
  nlohmann::ordered_json root;
  root["nextSerial"] = state.next_serial;
  if (state.usage_seed != 0) root["usageSeed"] = state.usage_seed;
  root["gpus"] = nlohmann::ordered_json::array();
  for (const auto& gpu : state.gpus) {
    nlohmann::ordered_json gj;
    gj["uuid"] = gpu.uuid;
    if (gpu.model != nullptr) gj["model"] = gpu.model->model;
    gj["name"] = gpu.name;
    gj["pciBusId"] = gpu.pci_bus_id;
    gj["memoryMiB"] = gpu.memory_mib;
    gj["migMode"] = gpu.mig_enabled;
    gj["migModePending"] = gpu.mig_pending_enabled;
    gj["processes"] = gpu.processes;
    if (gpu.utilization) gj["utilization"] = *gpu.utilization;
    if (gpu.memory_used_mib) gj["memoryUsedMiB"] = *gpu.memory_used_mib;
    gj["gpuInstances"] = nlohmann::ordered_json::array();
    for (const auto& gi : gpu.gpu_instances) {
      nlohmann::ordered_json ij;
      ij["id"] = gi.id;
      ij["profile"] = gpu.model->profiles[gi.profile].name;
      ij["start"] = gi.start;
      ij["size"] = gi.size;
      ij["computeInstances"] = nlohmann::ordered_json::array();
      for (const auto& ci : gi.compute_instances) {
        nlohmann::ordered_json cj = {{"id", ci.id},
                                     {"profileId", ci.profile_id},
                                     {"uuid", ci.mig_uuid},
                                     {"processes", ci.processes}};
        if (ci.memory_used_mib) cj["memoryUsedMiB"] = *ci.memory_used_mib;
        ij["computeInstances"].push_back(cj);
      }
      gj["gpuInstances"].push_back(ij);
    }
    root["gpus"].push_back(gj);
  }
  const std::string text = root.dump(1) + "\n";
  if (auto s = files::WriteFileAtomically(path, text); !s) {
    return Error{"simulated NVML: " + s.message()};
  }
  return Status::Ok();
}

std::optional<uint32_t> ComputeSlicesOf(uint32_t ci_profile) {
  // NVML_COMPUTE_INSTANCE_PROFILE_*: 1,2,3,4,7,8,6 slices, then 1_SLICE_REV1.
  static constexpr uint32_t kSlices[] = {1, 2, 3, 4, 7, 8, 6, 1};
  if (ci_profile >= std::size(kSlices)) return std::nullopt;
  return kSlices[ci_profile];
}

bool ComputeProfileFits(uint32_t gi_slices, uint32_t ci_slices) {
  return ci_slices <= gi_slices && (ci_slices == gi_slices || 2 * ci_slices <= gi_slices + 1);
}

int CheckCreateGpuInstance(const SimGpu& gpu, int profile, uint32_t start, uint32_t size) {
  const mig::GpuModelSpec& model = *gpu.model;
  const model::MigProfile& p = model.profiles[profile];
  // R2: only a listed placement.
  bool listed = std::any_of(p.placements.begin(), p.placements.end(),
                            [&](const auto& pl) { return pl.start == start && pl.size == size; });
  if (!listed) return NVML_ERROR_INVALID_ARGUMENT;
  const model::Placement wanted{start, size};
  int same_profile = 0;
  int ofa_used = 0;
  bool all_me_present = false;
  bool non_no_me_present = false;
  for (const auto& gi : gpu.gpu_instances) {
    // R1: no overlap with an existing instance.
    if (wanted.Overlaps(model::Placement{gi.start, gi.size})) {
      return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    if (gi.profile == profile) ++same_profile;
    ofa_used += model.hardware[gi.profile].ofa;
    const auto media = model.profiles[gi.profile].media();
    if (media == model::MediaEngines::kAll) all_me_present = true;
    if (media != model::MediaEngines::kNone) non_no_me_present = true;
  }
  // R3: the per-profile instance limit.
  if (p.max_count > 0 && same_profile >= p.max_count) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  // R4: one optical-flow accelerator per GPU, which +me (and +me.all) profiles take.
  int ofa_total = 0;
  for (const auto& hw : model.hardware) ofa_total = std::max(ofa_total, hw.ofa);
  if (model.hardware[profile].ofa > 0 && ofa_used + model.hardware[profile].ofa > ofa_total) {
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  // R5: +me.all blocks everything but -me profiles, in both directions.
  const auto media = p.media();
  if (all_me_present && media != model::MediaEngines::kNone) {
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  if (media == model::MediaEngines::kAll && non_no_me_present) {
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  return NVML_SUCCESS;
}

uint32_t ComputeProcesses(const SimGpu& gpu) {
  uint32_t n = gpu.processes;
  for (const auto& gi : gpu.gpu_instances) {
    for (const auto& ci : gi.compute_instances) n += ci.processes;
  }
  return n;
}

int SetMigMode(SimGpu& gpu, unsigned mode, int* activation) {
  if (activation == nullptr || mode > NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu.model == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  const bool enable = mode == NVML_DEVICE_MIG_ENABLE;
  if (!enable && !gpu.gpu_instances.empty()) return NVML_ERROR_IN_USE;
  *activation = NVML_SUCCESS;
  gpu.mig_pending_enabled = enable;
  if (gpu.mig_enabled == enable) return NVML_SUCCESS;
  // The guide: Ampere needs a GPU reset; "starting with the Hopper generation of GPUs, enabling
  // MIG mode no longer requires a GPU reset".
  const bool ampere =
      gpu.model->model.rfind("A100", 0) == 0 || gpu.model->model.rfind("A30", 0) == 0;
  if (ComputeProcesses(gpu) > 0) {
    *activation = NVML_ERROR_IN_USE;
  } else if (ampere) {
    *activation = NVML_ERROR_RESET_REQUIRED;
  } else {
    gpu.mig_enabled = enable;
  }
  return NVML_SUCCESS;
}

void Reboot(SimGpu& gpu) {
  gpu.gpu_instances.clear();
  gpu.processes = 0;
  gpu.mig_enabled = gpu.mig_pending_enabled;
}

uint32_t NextGpuInstanceId(const SimGpu& gpu) {
  for (uint32_t id = 1;; ++id) {
    bool used = std::any_of(gpu.gpu_instances.begin(), gpu.gpu_instances.end(),
                            [&](const auto& gi) { return gi.id == id; });
    if (!used) return id;
  }
}

std::string NewMigUuid(const SimGpu& gpu, uint64_t serial) {
  // FNV-1a over the parent UUID and a serial that never repeats: unique and reproducible.
  uint64_t h1 = 1469598103934665603ULL;
  for (char c : gpu.uuid) h1 = (h1 ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  uint64_t h2 = (h1 ^ serial) * 1099511628211ULL;
  h2 ^= h2 >> 29;
  char out[64];
  std::snprintf(out, sizeof out, "MIG-%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(h1 >> 32),
                static_cast<unsigned>((h1 >> 16) & 0xffff), static_cast<unsigned>(serial & 0xffff),
                static_cast<unsigned>((h2 >> 48) & 0xffff),
                static_cast<unsigned long long>(h2 & 0xffffffffffffULL));
  return out;
}

namespace {

// FNV-1a of the text, the seed mixed in, then splitmix64's finaliser.
uint64_t UsageHash(const std::string& text, uint64_t seed) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  h ^= seed * 0x9E3779B97F4A7C15ULL;
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ULL;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBULL;
  return h ^ (h >> 31);
}

}  // namespace

std::optional<uint32_t> SimUtilization(const SimState& state, const SimGpu& gpu) {
  if (gpu.mig_enabled) return std::nullopt;
  if (gpu.utilization) return *gpu.utilization;
  if (gpu.processes == 0) return 0U;
  const uint64_t busy = uint64_t{25} * gpu.processes + UsageHash(gpu.uuid, state.usage_seed) % 25;
  return static_cast<uint32_t>(std::min<uint64_t>(busy, 100));
}

uint64_t SimMigMemoryUsedMib(const SimState& state, const SimGpu& gpu, const SimGpuInstance& gi,
                             const SimComputeInstance& ci) {
  const auto memory = static_cast<uint64_t>(gpu.model->profiles[gi.profile].memory_mib);
  if (ci.memory_used_mib) return std::min(*ci.memory_used_mib, memory);
  if (ci.processes == 0) return 0;
  const uint64_t used = memory * std::min<uint64_t>(ci.processes, 2) / 4 +
                        UsageHash(ci.mig_uuid, state.usage_seed) % 256;
  return std::min(used, memory);
}

uint64_t SimMemoryUsedMib(const SimState& state, const SimGpu& gpu) {
  if (gpu.mig_enabled) {
    uint64_t sum = 0;
    for (const auto& gi : gpu.gpu_instances) {
      for (const auto& ci : gi.compute_instances) sum += SimMigMemoryUsedMib(state, gpu, gi, ci);
    }
    return std::min(sum, gpu.memory_mib);
  }
  if (gpu.memory_used_mib) return std::min(*gpu.memory_used_mib, gpu.memory_mib);
  if (gpu.processes == 0) return 0;
  const uint64_t used = gpu.memory_mib * std::min<uint64_t>(gpu.processes, 4) / 8 +
                        UsageHash(gpu.uuid, state.usage_seed) % 1024;
  return std::min(used, gpu.memory_mib);
}

}  // namespace tessera::nvml_sim
