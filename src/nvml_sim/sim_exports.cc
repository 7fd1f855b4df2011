// The simulated NVML: the C symbols of libnvidia-ml.so.1 that tessera uses (adapters/nvml/
// nvml_api.h), served from a state file (TESSERA_NVML_SIM_STATE) with the driver's rules and
// return codes, and fault injection (TESSERA_NVML_SIM_FAULTS, sim_faults.h). XID events are
// read from "<state>.events" (lines "GPU-UUID XID"), which tests append to.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>

#include "adapters/nvml/nvml_api.h"
#include "nvml_sim/sim_faults.h"
#include "nvml_sim/sim_state.h"

using tessera::nvml_sim::FaultPlan;
using tessera::nvml_sim::SimComputeInstance;
using tessera::nvml_sim::SimGpu;
using tessera::nvml_sim::SimGpuInstance;
using tessera::nvml_sim::SimState;

// The opaque handle types of nvml_api.h, defined here. Handles stay valid for the process; a
// handle whose instance was destroyed answers INVALID_ARGUMENT, as a stale NVML handle does.
struct nvmlDevice_st {
  size_t gpu = 0;
  bool mig = false;
  uint32_t gi = 0;
  uint32_t ci = 0;
};
struct nvmlGpuInstance_st {
  size_t gpu = 0;
  uint32_t gi = 0;
};
struct nvmlComputeInstance_st {
  size_t gpu = 0;
  uint32_t gi = 0;
  uint32_t ci = 0;
};
struct nvmlEventSet_st {
  std::vector<size_t> gpus;
};

namespace {

constexpr int kDriverNotLoaded = 9;  // NVML_ERROR_DRIVER_NOT_LOADED

struct Sim {
  std::mutex mu;
  int init_count = 0;
  std::string path;
  SimState state;
  FaultPlan faults;
  bool faults_loaded = false;
  bool faults_invalid = false;
  std::optional<tessera::mig::GpuModelCatalog> catalog;
  std::map<std::tuple<size_t, bool, uint32_t, uint32_t>, std::unique_ptr<nvmlDevice_st>> devices;
  std::map<std::pair<size_t, uint32_t>, std::unique_ptr<nvmlGpuInstance_st>> gpu_instances;
  std::map<std::tuple<size_t, uint32_t, uint32_t>, std::unique_ptr<nvmlComputeInstance_st>>
      compute_instances;
  std::vector<std::unique_ptr<nvmlEventSet_st>> event_sets;

  nvmlDevice_t Device(size_t gpu, bool mig = false, uint32_t gi = 0, uint32_t ci = 0) {
    auto& slot = devices[{gpu, mig, gi, ci}];
    if (!slot) slot = std::make_unique<nvmlDevice_st>(nvmlDevice_st{gpu, mig, gi, ci});
    return slot.get();
  }
  nvmlGpuInstance_t GpuInstance(size_t gpu, uint32_t gi) {
    auto& slot = gpu_instances[{gpu, gi}];
    if (!slot) slot = std::make_unique<nvmlGpuInstance_st>(nvmlGpuInstance_st{gpu, gi});
    return slot.get();
  }
  nvmlComputeInstance_t ComputeInstance(size_t gpu, uint32_t gi, uint32_t ci) {
    auto& slot = compute_instances[{gpu, gi, ci}];
    if (!slot) {
      slot = std::make_unique<nvmlComputeInstance_st>(nvmlComputeInstance_st{gpu, gi, ci});
    }
    return slot.get();
  }
  bool Persist() {
    auto s = tessera::nvml_sim::SaveState(path, state);
    if (!s.ok()) std::fprintf(stderr, "tessera-nvml-sim: %s\n", s.message().c_str());
    return s.ok();
  }
};

Sim& TheSim() {
  static Sim sim;
  return sim;
}

// Runs one API call: counts it for fault injection, requires nvmlInit, then aborts the process
// afterwards when a rule says so (the state file already holds the call's effect). `device`,
// when the call takes one, lets a rule name its GPU.
template <class Body>
nvmlReturn_t Call(const char* function, Body body, bool needs_init = true,
                  nvmlDevice_t device = nullptr) {
  Sim& sim = TheSim();
  std::unique_lock lock(sim.mu);
  // The fault plan is read when the library is first used and again at each fresh nvmlInit, so
  // a process that shuts NVML down and starts again sees the current configuration.
  if (sim.init_count == 0 && std::strcmp(function, "nvmlInit_v2") == 0) sim.faults_loaded = false;
  if (!sim.faults_loaded) {
    sim.faults_loaded = true;
    const char* text = std::getenv("TESSERA_NVML_SIM_FAULTS");
    auto plan = FaultPlan::Parse(text == nullptr ? "" : text);
    if (plan.ok()) {
      sim.faults = std::move(plan.value());
      sim.faults_invalid = false;
    } else {
      std::fprintf(stderr, "tessera-nvml-sim: %s\n", plan.error().message.c_str());
      sim.faults_invalid = true;
    }
  }
  if (sim.faults_invalid) return NVML_ERROR_UNKNOWN;
  const std::string gpu_uuid = device != nullptr && device->gpu < sim.state.gpus.size()
                                   ? sim.state.gpus[device->gpu].uuid
                                   : std::string();
  nvmlReturn_t rc = sim.faults.BeforeCall(function, gpu_uuid);
  if (rc == 0) {
    rc = (needs_init && sim.init_count == 0) ? NVML_ERROR_UNINITIALIZED : body(sim);
  }
  if (sim.faults.AbortAfter(function, gpu_uuid)) {
    std::fprintf(stderr, "tessera-nvml-sim: abort after %s (fault injection)\n", function);
    std::fflush(stderr);
    std::abort();
  }
  return rc;
}

SimGpu* GpuOf(Sim& sim, nvmlDevice_t device) {
  if (device == nullptr || device->gpu >= sim.state.gpus.size()) return nullptr;
  return &sim.state.gpus[device->gpu];
}

SimGpuInstance* FindGi(SimGpu& gpu, uint32_t id) {
  for (auto& gi : gpu.gpu_instances) {
    if (gi.id == id) return &gi;
  }
  return nullptr;
}

SimComputeInstance* FindCi(SimGpuInstance& gi, uint32_t id) {
  for (auto& ci : gi.compute_instances) {
    if (ci.id == id) return &ci;
  }
  return nullptr;
}

int ProfileByEnum(const SimGpu& gpu, unsigned value) {
  for (size_t i = 0; i < gpu.model->hardware.size(); ++i) {
    if (gpu.model->hardware[i].nvml_enum == static_cast<int>(value)) return static_cast<int>(i);
  }
  return -1;
}

int ProfileById(const SimGpu& gpu, unsigned id) {
  for (size_t i = 0; i < gpu.model->hardware.size(); ++i) {
    if (gpu.model->hardware[i].nvml_id == static_cast<int>(id)) return static_cast<int>(i);
  }
  return -1;
}

unsigned SmCount(const SimGpu& gpu, int profile) {
  int sm = gpu.model->hardware[profile].sm_count;
  return sm > 0 ? static_cast<unsigned>(sm) : 16 * gpu.model->profiles[profile].slice_count;
}

nvmlReturn_t CopyString(const std::string& text, char* out, unsigned length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

// The MIG devices (compute instances) of a GPU in index order.
std::vector<std::pair<const SimGpuInstance*, const SimComputeInstance*>> MigDevices(
    const SimGpu& gpu) {
  std::vector<std::pair<const SimGpuInstance*, const SimComputeInstance*>> out;
  for (const auto& gi : gpu.gpu_instances) {
    for (const auto& ci : gi.compute_instances) out.emplace_back(&gi, &ci);
  }
  return out;
}

// Resolves a MIG device handle to its instances; nullptr pair when stale.
std::pair<SimGpuInstance*, SimComputeInstance*> MigOf(SimGpu& gpu, nvmlDevice_t device) {
  SimGpuInstance* gi = FindGi(gpu, device->gi);
  SimComputeInstance* ci = gi == nullptr ? nullptr : FindCi(*gi, device->ci);
  return {gi, ci};
}

bool Usable(const SimGpu& gpu) { return gpu.model != nullptr && gpu.mig_enabled; }

}  // namespace

#define TESSERA_EXPORT extern "C" __attribute__((visibility("default")))

TESSERA_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  return Call(
      "nvmlInit_v2",
      [](Sim& sim) -> nvmlReturn_t {
        if (sim.init_count > 0) {
          ++sim.init_count;
          return NVML_SUCCESS;
        }
        const char* path = std::getenv("TESSERA_NVML_SIM_STATE");
        if (path == nullptr || *path == '\0') {
          std::fprintf(stderr, "tessera-nvml-sim: TESSERA_NVML_SIM_STATE is not set\n");
          return kDriverNotLoaded;
        }
        if (!sim.catalog) {
          auto catalog = tessera::mig::GpuModelCatalog::Builtin();
          if (!catalog.ok()) return NVML_ERROR_UNKNOWN;
          sim.catalog = std::move(catalog.value());
        }
        auto state = tessera::nvml_sim::LoadState(path, *sim.catalog);
        if (!state.ok()) {
          std::fprintf(stderr, "tessera-nvml-sim: %s\n", state.error().message.c_str());
          return kDriverNotLoaded;
        }
        // "<state>.reboot" stands for a reboot, a GPU reset or a driver reload since the last
        // process: every GPU and compute instance and every process is gone, and a pending MIG
        // mode is applied (MIG mode itself stays, as it does on the hardware). Consumed here, by
        // the first nvmlInit after it appeared.
        const std::string reboot = std::string(path) + ".reboot";
        if (::access(reboot.c_str(), F_OK) == 0) {
          for (auto& gpu : state.value().gpus) tessera::nvml_sim::Reboot(gpu);
          if (auto saved = tessera::nvml_sim::SaveState(path, state.value()); !saved) {
            std::fprintf(stderr, "tessera-nvml-sim: %s\n", saved.message().c_str());
            return NVML_ERROR_UNKNOWN;
          }
          ::unlink(reboot.c_str());
        }
        sim.path = path;
        sim.state = std::move(state.value());
        ++sim.init_count;
        return NVML_SUCCESS;
      },
      /*needs_init=*/false);
}

TESSERA_EXPORT nvmlReturn_t nvmlShutdown(void) {
  return Call("nvmlShutdown", [](Sim& sim) -> nvmlReturn_t {
    --sim.init_count;
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case kDriverNotLoaded:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires reset";
    case NVML_ERROR_IN_USE:
      return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Insufficient Resources";
    default:
      return "Unknown Error";
  }
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  return Call("nvmlDeviceGetCount_v2", [&](Sim& sim) -> nvmlReturn_t {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *count = static_cast<unsigned>(sim.state.gpus.size());
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
  return Call("nvmlDeviceGetHandleByIndex_v2", [&](Sim& sim) -> nvmlReturn_t {
    if (device == nullptr || index >= sim.state.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
    *device = sim.Device(index);
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  return Call("nvmlDeviceGetHandleByUUID", [&](Sim& sim) -> nvmlReturn_t {
    if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    for (size_t g = 0; g < sim.state.gpus.size(); ++g) {
      const SimGpu& gpu = sim.state.gpus[g];
      if (gpu.uuid == uuid) {
        *device = sim.Device(g);
        return NVML_SUCCESS;
      }
      for (auto [gi, ci] : MigDevices(gpu)) {
        if (ci->mig_uuid == uuid) {
          *device = sim.Device(g, true, gi->id, ci->id);
          return NVML_SUCCESS;
        }
      }
    }
    return NVML_ERROR_NOT_FOUND;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned* index) {
  return Call("nvmlDeviceGetIndex", [&](Sim& sim) -> nvmlReturn_t {
    if (GpuOf(sim, device) == nullptr || device->mig || index == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    *index = static_cast<unsigned>(device->gpu);
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned length) {
  return Call("nvmlDeviceGetUUID", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = GpuOf(sim, device);
    if (gpu == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!device->mig) return CopyString(gpu->uuid, uuid, length);
    auto [gi, ci] = MigOf(*gpu, device);
    if (ci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    return CopyString(ci->mig_uuid, uuid, length);
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned length) {
  return Call("nvmlDeviceGetName", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = GpuOf(sim, device);
    if (gpu == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!device->mig) return CopyString(gpu->name, name, length);
    auto [gi, ci] = MigOf(*gpu, device);
    if (ci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    return CopyString(gpu->name + " MIG " + gpu->model->profiles[gi->profile].name, name, length);
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return Call("nvmlDeviceGetMemoryInfo", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = GpuOf(sim, device);
    if (gpu == nullptr || memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t mib = gpu->memory_mib;
    uint64_t used = 0;
    if (device->mig) {
      auto [gi, ci] = MigOf(*gpu, device);
      if (ci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
      mib = static_cast<uint64_t>(gpu->model->profiles[gi->profile].memory_mib);
      used = tessera::nvml_sim::SimMigMemoryUsedMib(sim.state, *gpu, *gi, *ci);
    } else {
      used = tessera::nvml_sim::SimMemoryUsedMib(sim.state, *gpu);
    }
    memory->total = mib << 20;
    memory->used = used << 20;
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
  });
}

// Synthetic, deterministic values (sim_state.h, SimUtilization): NOT_SUPPORTED on MIG devices
// and on a GPU in MIG mode, as the driver answers.
TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                          nvmlUtilization_t* utilization) {
  return Call(
      "nvmlDeviceGetUtilizationRates",
      [&](Sim& sim) -> nvmlReturn_t {
        SimGpu* gpu = GpuOf(sim, device);
        if (gpu == nullptr || utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        if (device->mig) {
          if (MigOf(*gpu, device).second == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
          return NVML_ERROR_NOT_SUPPORTED;
        }
        auto busy = tessera::nvml_sim::SimUtilization(sim.state, *gpu);
        if (!busy) return NVML_ERROR_NOT_SUPPORTED;
        utilization->gpu = *busy;
        utilization->memory = *busy / 2;
        return NVML_SUCCESS;
      },
      true, device);
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return Call("nvmlDeviceGetPciInfo_v3", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = GpuOf(sim, device);
    if (gpu == nullptr || device->mig || pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    std::memset(pci, 0, sizeof *pci);
    std::snprintf(pci->busId, sizeof pci->busId, "%s", gpu->pci_bus_id.c_str());
    const std::string legacy = gpu->pci_bus_id.size() > 4 ? gpu->pci_bus_id.substr(4) : "";
    std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", legacy.c_str());
    std::sscanf(gpu->pci_bus_id.c_str(), "%x:%x:%x", &pci->domain, &pci->bus, &pci->device);
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned* current,
                                                 unsigned* pending) {
  return Call("nvmlDeviceGetMigMode", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = GpuOf(sim, device);
    if (gpu == nullptr || device->mig || current == nullptr || pending == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (gpu->model == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    *current = gpu->mig_enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    *pending = gpu->mig_pending_enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned mode,
                                                 nvmlReturn_t* activationStatus) {
  return Call(
      "nvmlDeviceSetMigMode",
      [&](Sim& sim) -> nvmlReturn_t {
        SimGpu* gpu = GpuOf(sim, device);
        if (gpu == nullptr || device->mig) return NVML_ERROR_INVALID_ARGUMENT;
        const SimGpu before = *gpu;
        const int rc = tessera::nvml_sim::SetMigMode(*gpu, mode, activationStatus);
        if (rc == NVML_SUCCESS && !sim.Persist()) {
          *gpu = before;
          return NVML_ERROR_UNKNOWN;
        }
        return rc;
      },
      true, device);
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                    unsigned* infoCount,
                                                                    nvmlProcessInfo_t* infos) {
  return Call(
      "nvmlDeviceGetComputeRunningProcesses_v3",
      [&](Sim& sim) -> nvmlReturn_t {
        SimGpu* gpu = GpuOf(sim, device);
        if (gpu == nullptr || device->mig || infoCount == nullptr) {
          return NVML_ERROR_INVALID_ARGUMENT;
        }
        const unsigned n = tessera::nvml_sim::ComputeProcesses(*gpu);
        if (n > *infoCount || (n > 0 && infos == nullptr)) {
          *infoCount = n;  // the size the caller needs
          return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        for (unsigned i = 0; i < n; ++i) {
          infos[i] = nvmlProcessInfo_t{};
          infos[i].pid = 1000 + i;
          infos[i].gpuInstanceId = 0xFFFFFFFFU;
          infos[i].computeInstanceId = 0xFFFFFFFFU;
        }
        *infoCount = n;
        return NVML_SUCCESS;
      },
      true, device);
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(
    nvmlDevice_t device, unsigned profile, nvmlGpuInstanceProfileInfo_t* info) {
  return Call("nvmlDeviceGetGpuInstanceProfileInfo", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = GpuOf(sim, device);
    if (gpu == nullptr || device->mig || info == nullptr ||
        profile >= kNvmlGpuInstanceProfileCount) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (!Usable(*gpu)) return NVML_ERROR_NOT_SUPPORTED;
    int p = ProfileByEnum(*gpu, profile);
    if (p < 0) return NVML_ERROR_NOT_SUPPORTED;
    const auto& mp = gpu->model->profiles[p];
    const auto& hw = gpu->model->hardware[p];
    *info = nvmlGpuInstanceProfileInfo_t{};
    info->id = static_cast<unsigned>(hw.nvml_id);
    info->sliceCount = mp.slice_count;
    info->instanceCount = static_cast<unsigned>(mp.EffectiveMaxCount());
    info->multiprocessorCount = SmCount(*gpu, p);
    info->copyEngineCount = static_cast<unsigned>(hw.copy_engines);
    info->decoderCount = static_cast<unsigned>(hw.decoders);
    info->encoderCount = static_cast<unsigned>(hw.encoders);
    info->jpegCount = static_cast<unsigned>(hw.jpeg);
    info->ofaCount = static_cast<unsigned>(hw.ofa);
    info->memorySizeMB = static_cast<unsigned long long>(mp.memory_mib);
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned profileId, nvmlGpuInstancePlacement_t* placements,
    unsigned* count) {
  return Call("nvmlDeviceGetGpuInstancePossiblePlacements_v2", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = GpuOf(sim, device);
    if (gpu == nullptr || device->mig || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (gpu->model == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    int p = ProfileById(*gpu, profileId);
    if (p < 0) return NVML_ERROR_INVALID_ARGUMENT;
    const auto& list = gpu->model->profiles[p].placements;
    if (placements == nullptr) {
      *count = static_cast<unsigned>(list.size());
      return NVML_SUCCESS;
    }
    if (*count < list.size()) {
      *count = static_cast<unsigned>(list.size());
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (size_t i = 0; i < list.size(); ++i) placements[i] = {list[i].start, list[i].size};
    *count = static_cast<unsigned>(list.size());
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned profileId, const nvmlGpuInstancePlacement_t* placement,
    nvmlGpuInstance_t* gpuInstance) {
  return Call("nvmlDeviceCreateGpuInstanceWithPlacement", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = GpuOf(sim, device);
    if (gpu == nullptr || device->mig || placement == nullptr || gpuInstance == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (!Usable(*gpu)) return NVML_ERROR_NOT_SUPPORTED;
    int p = ProfileById(*gpu, profileId);
    if (p < 0) return NVML_ERROR_INVALID_ARGUMENT;
    int rc = tessera::nvml_sim::CheckCreateGpuInstance(*gpu, p, placement->start, placement->size);
    if (rc != NVML_SUCCESS) return rc;
    SimGpuInstance gi;
    gi.id = tessera::nvml_sim::NextGpuInstanceId(*gpu);
    gi.profile = p;
    gi.start = placement->start;
    gi.size = placement->size;
    gpu->gpu_instances.push_back(gi);
    if (!sim.Persist()) {
      gpu->gpu_instances.pop_back();
      return NVML_ERROR_UNKNOWN;
    }
    *gpuInstance = sim.GpuInstance(device->gpu, gi.id);
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned profileId,
                                                      nvmlGpuInstance_t* gpuInstances,
                                                      unsigned* count) {
  return Call("nvmlDeviceGetGpuInstances", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = GpuOf(sim, device);
    if (gpu == nullptr || device->mig || count == nullptr || gpuInstances == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (!Usable(*gpu)) return NVML_ERROR_NOT_SUPPORTED;
    int p = ProfileById(*gpu, profileId);
    if (p < 0) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned n = 0;
    for (const auto& gi : gpu->gpu_instances) {
      if (gi.profile == p) gpuInstances[n++] = sim.GpuInstance(device->gpu, gi.id);
    }
    *count = n;
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned id,
                                                         nvmlGpuInstance_t* gpuInstance) {
  return Call("nvmlDeviceGetGpuInstanceById", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = GpuOf(sim, device);
    if (gpu == nullptr || device->mig || gpuInstance == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (!Usable(*gpu)) return NVML_ERROR_NOT_SUPPORTED;
    if (FindGi(*gpu, id) == nullptr) return NVML_ERROR_NOT_FOUND;
    *gpuInstance = sim.GpuInstance(device->gpu, id);
    return NVML_SUCCESS;
  });
}

namespace {
SimGpuInstance* GiOf(Sim& sim, nvmlGpuInstance_t handle, SimGpu** gpu_out = nullptr) {
  if (handle == nullptr || handle->gpu >= sim.state.gpus.size()) return nullptr;
  SimGpu& gpu = sim.state.gpus[handle->gpu];
  if (gpu_out != nullptr) *gpu_out = &gpu;
  return FindGi(gpu, handle->gi);
}
}  // namespace

TESSERA_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance,
                                                   nvmlGpuInstanceInfo_t* info) {
  return Call("nvmlGpuInstanceGetInfo", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = nullptr;
    SimGpuInstance* gi = GiOf(sim, gpuInstance, &gpu);
    if (gi == nullptr || info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    info->device = sim.Device(gpuInstance->gpu);
    info->id = gi->id;
    info->profileId = static_cast<unsigned>(gpu->model->hardware[gi->profile].nvml_id);
    info->placement = {gi->start, gi->size};
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpuInstance, unsigned profile, unsigned engProfile,
    nvmlComputeInstanceProfileInfo_t* info) {
  return Call("nvmlGpuInstanceGetComputeInstanceProfileInfo", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = nullptr;
    SimGpuInstance* gi = GiOf(sim, gpuInstance, &gpu);
    if (gi == nullptr || info == nullptr || profile >= kNvmlComputeInstanceProfileCount) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (engProfile != kNvmlComputeInstanceEngineProfileShared) return NVML_ERROR_NOT_SUPPORTED;
    auto ci_slices = tessera::nvml_sim::ComputeSlicesOf(profile);
    const uint32_t gi_slices = gpu->model->profiles[gi->profile].slice_count;
    // REV1 (7) and 7_SLICE_NVL (8) compute profiles are not modelled.
    if (!ci_slices || profile >= 7 ||
        !tessera::nvml_sim::ComputeProfileFits(gi_slices, *ci_slices)) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    *info = nvmlComputeInstanceProfileInfo_t{};
    info->id = profile;
    info->sliceCount = *ci_slices;
    info->instanceCount = gi_slices / *ci_slices;
    info->multiprocessorCount = SmCount(*gpu, gi->profile) * *ci_slices / gi_slices;
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(
    nvmlGpuInstance_t gpuInstance, unsigned profileId, nvmlComputeInstance_t* computeInstance) {
  return Call("nvmlGpuInstanceCreateComputeInstance", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = nullptr;
    SimGpuInstance* gi = GiOf(sim, gpuInstance, &gpu);
    if (gi == nullptr || computeInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    auto ci_slices = tessera::nvml_sim::ComputeSlicesOf(profileId);
    const uint32_t gi_slices = gpu->model->profiles[gi->profile].slice_count;
    if (!ci_slices || profileId >= 7 ||
        !tessera::nvml_sim::ComputeProfileFits(gi_slices, *ci_slices)) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    uint32_t used = 0;
    for (const auto& ci : gi->compute_instances) used += ci.slice_count;
    if (used + *ci_slices > gi_slices) return NVML_ERROR_INSUFFICIENT_RESOURCES;
    SimComputeInstance ci;
    while (FindCi(*gi, ci.id) != nullptr) ++ci.id;
    ci.profile_id = profileId;
    ci.slice_count = *ci_slices;
    ci.mig_uuid = tessera::nvml_sim::NewMigUuid(*gpu, sim.state.next_serial++);
    gi->compute_instances.push_back(ci);
    if (!sim.Persist()) {
      gi->compute_instances.pop_back();
      return NVML_ERROR_UNKNOWN;
    }
    *computeInstance = sim.ComputeInstance(gpuInstance->gpu, gi->id, ci.id);
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t
nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance, unsigned profileId,
                                   nvmlComputeInstance_t* computeInstances, unsigned* count) {
  return Call("nvmlGpuInstanceGetComputeInstances", [&](Sim& sim) -> nvmlReturn_t {
    SimGpuInstance* gi = GiOf(sim, gpuInstance);
    if (gi == nullptr || computeInstances == nullptr || count == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    unsigned n = 0;
    for (const auto& ci : gi->compute_instances) {
      if (ci.profile_id == profileId) {
        computeInstances[n++] = sim.ComputeInstance(gpuInstance->gpu, gi->id, ci.id);
      }
    }
    *count = n;
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(
    nvmlGpuInstance_t gpuInstance, unsigned id, nvmlComputeInstance_t* computeInstance) {
  return Call("nvmlGpuInstanceGetComputeInstanceById", [&](Sim& sim) -> nvmlReturn_t {
    SimGpuInstance* gi = GiOf(sim, gpuInstance);
    if (gi == nullptr || computeInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (FindCi(*gi, id) == nullptr) return NVML_ERROR_NOT_FOUND;
    *computeInstance = sim.ComputeInstance(gpuInstance->gpu, gi->id, id);
    return NVML_SUCCESS;
  });
}

namespace {
SimComputeInstance* CiOf(Sim& sim, nvmlComputeInstance_t handle, SimGpuInstance** gi_out) {
  if (handle == nullptr || handle->gpu >= sim.state.gpus.size()) return nullptr;
  SimGpuInstance* gi = FindGi(sim.state.gpus[handle->gpu], handle->gi);
  if (gi == nullptr) return nullptr;
  *gi_out = gi;
  return FindCi(*gi, handle->ci);
}
}  // namespace

TESSERA_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                                          nvmlComputeInstanceInfo_t* info) {
  return Call("nvmlComputeInstanceGetInfo_v2", [&](Sim& sim) -> nvmlReturn_t {
    SimGpuInstance* gi = nullptr;
    SimComputeInstance* ci = CiOf(sim, computeInstance, &gi);
    if (ci == nullptr || info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    info->device = sim.Device(computeInstance->gpu);
    info->gpuInstance = sim.GpuInstance(computeInstance->gpu, gi->id);
    info->id = ci->id;
    info->profileId = ci->profile_id;
    uint32_t start = 0;
    for (const auto& other : gi->compute_instances) {
      if (other.id < ci->id) start += other.slice_count;
    }
    info->placement = {start, ci->slice_count};
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance) {
  return Call("nvmlComputeInstanceDestroy", [&](Sim& sim) -> nvmlReturn_t {
    SimGpuInstance* gi = nullptr;
    SimComputeInstance* ci = CiOf(sim, computeInstance, &gi);
    if (ci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (ci->processes > 0) return NVML_ERROR_IN_USE;
    SimComputeInstance saved = *ci;
    std::erase_if(gi->compute_instances, [&](const auto& c) { return c.id == saved.id; });
    if (!sim.Persist()) {
      gi->compute_instances.push_back(saved);
      return NVML_ERROR_UNKNOWN;
    }
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance) {
  return Call("nvmlGpuInstanceDestroy", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = nullptr;
    SimGpuInstance* gi = GiOf(sim, gpuInstance, &gpu);
    if (gi == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!gi->compute_instances.empty()) return NVML_ERROR_IN_USE;  // rule R7
    SimGpuInstance saved = *gi;
    std::erase_if(gpu->gpu_instances, [&](const auto& g) { return g.id == saved.id; });
    if (!sim.Persist()) {
      gpu->gpu_instances.push_back(saved);
      return NVML_ERROR_UNKNOWN;
    }
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned* count) {
  return Call("nvmlDeviceGetMaxMigDeviceCount", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = GpuOf(sim, device);
    if (gpu == nullptr || device->mig || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *count = Usable(*gpu) ? gpu->model->compute_slices : 0;
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned index,
                                                                nvmlDevice_t* migDevice) {
  return Call("nvmlDeviceGetMigDeviceHandleByIndex", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = GpuOf(sim, device);
    if (gpu == nullptr || device->mig || migDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!Usable(*gpu) || index >= gpu->model->compute_slices) return NVML_ERROR_INVALID_ARGUMENT;
    auto list = MigDevices(*gpu);
    if (index >= list.size()) return NVML_ERROR_NOT_FOUND;
    *migDevice = sim.Device(device->gpu, true, list[index].first->id, list[index].second->id);
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned* id) {
  return Call("nvmlDeviceGetGpuInstanceId", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = GpuOf(sim, device);
    if (gpu == nullptr || id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!device->mig) return NVML_ERROR_NOT_SUPPORTED;
    if (MigOf(*gpu, device).second == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *id = device->gi;
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned* id) {
  return Call("nvmlDeviceGetComputeInstanceId", [&](Sim& sim) -> nvmlReturn_t {
    SimGpu* gpu = GpuOf(sim, device);
    if (gpu == nullptr || id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!device->mig) return NVML_ERROR_NOT_SUPPORTED;
    if (MigOf(*gpu, device).second == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *id = device->ci;
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  return Call("nvmlEventSetCreate", [&](Sim& sim) -> nvmlReturn_t {
    if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    sim.event_sets.push_back(std::make_unique<nvmlEventSet_st>());
    *set = sim.event_sets.back().get();
    return NVML_SUCCESS;
  });
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                             unsigned long long* eventTypes) {
  return Call(
      "nvmlDeviceGetSupportedEventTypes",
      [&](Sim& sim) -> nvmlReturn_t {
        if (GpuOf(sim, device) == nullptr || eventTypes == nullptr) {
          return NVML_ERROR_INVALID_ARGUMENT;
        }
        *eventTypes = kNvmlEventTypeXidCriticalError | kNvmlEventTypeDoubleBitEccError |
                      kNvmlEventTypeSingleBitEccError;
        return NVML_SUCCESS;
      },
      /*needs_init=*/true, device);
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                                     unsigned long long eventTypes,
                                                     nvmlEventSet_t set) {
  return Call(
      "nvmlDeviceRegisterEvents",
      [&](Sim& sim) -> nvmlReturn_t {
        if (GpuOf(sim, device) == nullptr || set == nullptr || device->mig) {
          return NVML_ERROR_INVALID_ARGUMENT;
        }
        if ((eventTypes & kNvmlEventTypeXidCriticalError) != 0) set->gpus.push_back(device->gpu);
        return NVML_SUCCESS;
      },
      /*needs_init=*/true, device);
}

namespace {
// Takes the first pending event for one of `gpus` out of "<state>.events".
std::optional<std::pair<size_t, unsigned long long>> TakeEvent(Sim& sim,
                                                               const std::vector<size_t>& gpus) {
  const std::string path = sim.path + ".events";
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::vector<std::string> rest;
  std::optional<std::pair<size_t, unsigned long long>> found;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string uuid;
    unsigned long long xid = 0;
    if (!(fields >> uuid >> xid)) continue;
    if (!found) {
      for (size_t g : gpus) {
        if (sim.state.gpus[g].uuid == uuid) found = std::make_pair(g, xid);
      }
      if (found) continue;
    }
    rest.push_back(line);
  }
  in.close();
  if (found) {
    std::ofstream out(path + ".tmp", std::ios::trunc);
    for (const auto& l : rest) out << l << "\n";
    out.close();
    std::rename((path + ".tmp").c_str(), path.c_str());
  }
  return found;
}
}  // namespace

TESSERA_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                unsigned timeoutms) {
  // Polls the events file without holding the lock across the wait, so other calls proceed.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutms);
  for (;;) {
    nvmlReturn_t rc = Call("nvmlEventSetWait_v2", [&](Sim& sim) -> nvmlReturn_t {
      if (set == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
      auto event = TakeEvent(sim, set->gpus);
      if (!event) return NVML_ERROR_TIMEOUT;
      *data = nvmlEventData_t{};
      data->device = sim.Device(event->first);
      data->eventType = kNvmlEventTypeXidCriticalError;
      data->eventData = event->second;
      data->gpuInstanceId = 0xFFFFFFFFU;
      data->computeInstanceId = 0xFFFFFFFFU;
      return NVML_SUCCESS;
    });
    if (rc != NVML_ERROR_TIMEOUT || std::chrono::steady_clock::now() >= deadline) return rc;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TESSERA_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  return Call("nvmlEventSetFree", [&](Sim&) -> nvmlReturn_t {
    if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    set->gpus.clear();
    return NVML_SUCCESS;
  });
}

// Every symbol of the list must be defined here: a missing one fails to compile.
#define TESSERA_CHECK_DEFINED(name, ret, params)                                                 \
  static_assert(                                                                                 \
      std::is_same_v<decltype(&::name), ret(*) params>, /* NOLINT(bugprone-macro-parentheses) */ \
      #name " signature");
TESSERA_NVML_FUNCTIONS(TESSERA_CHECK_DEFINED)
TESSERA_NVML_OPTIONAL_FUNCTIONS(TESSERA_CHECK_DEFINED)
#undef TESSERA_CHECK_DEFINED
