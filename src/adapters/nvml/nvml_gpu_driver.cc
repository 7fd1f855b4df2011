#include "adapters/nvml/nvml_gpu_driver.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <thread>

#include "core/node/profile_names.h"

namespace tessera::nvml {

using node::DriverMigInstance;
using node::DriverResult;

namespace {

template <class T>
DriverResult<T> Ok(T value) {
  return DriverResult<T>(std::move(value));
}

}  // namespace

Result<std::unique_ptr<NvmlGpuDriver>> NvmlGpuDriver::Create(std::unique_ptr<NvmlLibrary> library,
                                                             const mig::GpuModelCatalog* catalog) {
  const std::string path = library->path();
  int rc = library->nvmlInit_v2();
  if (rc != NVML_SUCCESS) {
    return Error{"NVML library " + path + ": nvmlInit_v2: " + library->nvmlErrorString(rc) +
                 " (code " + std::to_string(rc) + ")"};
  }
  return std::unique_ptr<NvmlGpuDriver>(new NvmlGpuDriver(std::move(library), catalog));
}

NvmlGpuDriver::~NvmlGpuDriver() {
  if (events_ != nullptr) lib_->nvmlEventSetFree(events_);
  lib_->nvmlShutdown();
}

Error NvmlGpuDriver::Fail(const char* function, int code, const std::string& what) const {
  if (observer_) observer_(function, code);
  return node::DriverError(function, code,
                           std::string(function) + " (" + what +
                               "): " + lib_->nvmlErrorString(code) + " (NVML code " +
                               std::to_string(code) + ")");
}

DriverResult<node::DriverGpu> NvmlGpuDriver::ReadGpu(unsigned index, nvmlDevice_t handle) {
  node::DriverGpu gpu;
  gpu.index = index;
  const std::string where = "GPU index " + std::to_string(index);
  std::array<char, kNvmlDeviceUuidBufferSize> text{};
  if (int rc = lib_->nvmlDeviceGetUUID(handle, text.data(), text.size()); rc != NVML_SUCCESS) {
    return Fail("nvmlDeviceGetUUID", rc, where);
  }
  gpu.uuid = text.data();
  if (int rc = lib_->nvmlDeviceGetName(handle, text.data(), text.size()); rc != NVML_SUCCESS) {
    return Fail("nvmlDeviceGetName", rc, gpu.uuid);
  }
  gpu.name = text.data();
  nvmlMemory_t memory{};
  int rc = lib_->nvmlDeviceGetMemoryInfo(handle, &memory);
  if (rc == NVML_SUCCESS) {
    gpu.memory_mib = memory.total >> 20;
  } else if (rc != NVML_ERROR_NOT_SUPPORTED) {  // NOT_SUPPORTED: the configured fallback applies
    return Fail("nvmlDeviceGetMemoryInfo", rc, gpu.uuid);
  }
  nvmlPciInfo_t pci{};
  if (lib_->nvmlDeviceGetPciInfo_v3(handle, &pci) == NVML_SUCCESS) gpu.pci_bus_id = pci.busId;
  unsigned current = 0;
  unsigned pending = 0;
  rc = lib_->nvmlDeviceGetMigMode(handle, &current, &pending);
  if (rc == NVML_SUCCESS) {
    gpu.mig_capable = true;
    gpu.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
    gpu.mig_pending_enabled = pending == NVML_DEVICE_MIG_ENABLE;
  } else if (rc != NVML_ERROR_NOT_SUPPORTED) {
    return Fail("nvmlDeviceGetMigMode", rc, gpu.uuid);
  }
  if (!gpu.mig_enabled) return Ok(std::move(gpu));

  const mig::GpuModelSpec* model = catalog_ != nullptr ? catalog_->Find(gpu.name) : nullptr;
  for (unsigned e = 0; e < kNvmlGpuInstanceProfileCount; ++e) {
    nvmlGpuInstanceProfileInfo_t info{};
    rc = lib_->nvmlDeviceGetGpuInstanceProfileInfo(handle, e, &info);
    if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT) continue;
    if (rc != NVML_SUCCESS) {
      return Fail("nvmlDeviceGetGpuInstanceProfileInfo", rc,
                  gpu.uuid + " profile " + std::to_string(e));
    }
    node::DriverMigProfile p;
    p.nvml_enum = e;
    p.nvml_id = info.id;
    p.slice_count = info.sliceCount;
    p.instance_count = info.instanceCount;
    p.sm_count = info.multiprocessorCount;
    p.memory_mib = static_cast<uint32_t>(info.memorySizeMB);
    p.name = node::MigProfileName(e, info.memorySizeMB, gpu.memory_mib);
    if (model != nullptr) {  // the table's name, which allowlists and the scheduler use
      for (size_t i = 0; i < model->hardware.size(); ++i) {
        if (model->hardware[i].nvml_enum == static_cast<int>(e)) p.name = model->profiles[i].name;
      }
    }
    unsigned count = 0;
    rc = lib_->nvmlDeviceGetGpuInstancePossiblePlacements_v2(handle, info.id, nullptr, &count);
    std::vector<nvmlGpuInstancePlacement_t> placements(count);
    if (rc == NVML_SUCCESS && count > 0) {
      rc = lib_->nvmlDeviceGetGpuInstancePossiblePlacements_v2(handle, info.id, placements.data(),
                                                               &count);
    }
    if (rc != NVML_SUCCESS) {
      return Fail("nvmlDeviceGetGpuInstancePossiblePlacements_v2", rc,
                  gpu.uuid + " profile " + p.name);
    }
    for (unsigned i = 0; i < count; ++i) {
      p.placements.push_back(model::Placement{placements[i].start, placements[i].size});
    }
    gpu.mig_profiles.push_back(std::move(p));
  }
  return Ok(std::move(gpu));
}

DriverResult<node::Discovery> NvmlGpuDriver::Discover() {
  std::lock_guard lock(mu_);
  gpus_.clear();
  node::Discovery found;
  unsigned count = 0;
  if (int rc = lib_->nvmlDeviceGetCount_v2(&count); rc != NVML_SUCCESS) {
    return Fail("nvmlDeviceGetCount_v2", rc, "all GPUs");
  }
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t handle = nullptr;
    if (int rc = lib_->nvmlDeviceGetHandleByIndex_v2(i, &handle); rc != NVML_SUCCESS) {
      found.problems.push_back(
          Fail("nvmlDeviceGetHandleByIndex_v2", rc, "GPU index " + std::to_string(i)));
      continue;
    }
    auto gpu = ReadGpu(i, handle);
    if (!gpu.ok()) {
      found.problems.push_back(gpu.error());
      continue;
    }
    gpus_[gpu.value().uuid] = GpuCache{handle, gpu.value()};
    found.gpus.push_back(std::move(gpu.value()));
  }
  return Ok(std::move(found));
}

DriverResult<NvmlGpuDriver::GpuCache*> NvmlGpuDriver::Gpu(const std::string& uuid) {
  if (auto it = gpus_.find(uuid); it != gpus_.end()) return Ok(&it->second);
  nvmlDevice_t handle = nullptr;
  if (int rc = lib_->nvmlDeviceGetHandleByUUID(uuid.c_str(), &handle); rc != NVML_SUCCESS) {
    return Fail("nvmlDeviceGetHandleByUUID", rc, uuid);
  }
  unsigned index = 0;
  if (int rc = lib_->nvmlDeviceGetIndex(handle, &index); rc != NVML_SUCCESS) {
    return Fail("nvmlDeviceGetIndex", rc, uuid);
  }
  auto gpu = ReadGpu(index, handle);
  if (!gpu.ok()) return gpu.error();
  return Ok(&(gpus_[uuid] = GpuCache{handle, std::move(gpu.value())}));
}

DriverResult<std::string> NvmlGpuDriver::MigUuidOf(nvmlDevice_t device, unsigned gi, unsigned ci,
                                                   const std::string& gpu_uuid) {
  unsigned max = 0;
  if (int rc = lib_->nvmlDeviceGetMaxMigDeviceCount(device, &max); rc != NVML_SUCCESS) {
    return Fail("nvmlDeviceGetMaxMigDeviceCount", rc, gpu_uuid);
  }
  for (unsigned i = 0; i < max; ++i) {
    nvmlDevice_t mig = nullptr;
    int rc = lib_->nvmlDeviceGetMigDeviceHandleByIndex(device, i, &mig);
    if (rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_INVALID_ARGUMENT) continue;  // sparse
    if (rc != NVML_SUCCESS) {
      return Fail("nvmlDeviceGetMigDeviceHandleByIndex", rc, gpu_uuid);
    }
    unsigned mig_gi = 0;
    unsigned mig_ci = 0;
    if (lib_->nvmlDeviceGetGpuInstanceId(mig, &mig_gi) != NVML_SUCCESS ||
        lib_->nvmlDeviceGetComputeInstanceId(mig, &mig_ci) != NVML_SUCCESS) {
      continue;
    }
    if (mig_gi != gi || mig_ci != ci) continue;
    std::array<char, kNvmlDeviceUuidBufferSize> text{};
    if (rc = lib_->nvmlDeviceGetUUID(mig, text.data(), text.size()); rc != NVML_SUCCESS) {
      return Fail("nvmlDeviceGetUUID", rc, gpu_uuid + " MIG device");
    }
    return Ok(std::string(text.data()));
  }
  return node::DriverError("nvmlDeviceGetMigDeviceHandleByIndex", NVML_ERROR_NOT_FOUND,
                           "no MIG device for GPU instance " + std::to_string(gi) +
                               " compute instance " + std::to_string(ci) + " on " + gpu_uuid);
}

DriverResult<std::vector<nvmlComputeInstance_t>> NvmlGpuDriver::ComputeInstancesOf(
    nvmlGpuInstance_t gi, const std::string& gpu_uuid) {
  std::vector<nvmlComputeInstance_t> all;
  for (unsigned p = 0; p < kNvmlComputeInstanceProfileCount; ++p) {
    nvmlComputeInstanceProfileInfo_t info{};
    int rc = lib_->nvmlGpuInstanceGetComputeInstanceProfileInfo(
        gi, p, kNvmlComputeInstanceEngineProfileShared, &info);
    if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT) continue;
    if (rc != NVML_SUCCESS) {
      return Fail("nvmlGpuInstanceGetComputeInstanceProfileInfo", rc, gpu_uuid);
    }
    std::vector<nvmlComputeInstance_t> cis(std::max(1U, info.instanceCount));
    unsigned n = static_cast<unsigned>(cis.size());
    rc = lib_->nvmlGpuInstanceGetComputeInstances(gi, info.id, cis.data(), &n);
    if (rc != NVML_SUCCESS) {
      return Fail("nvmlGpuInstanceGetComputeInstances", rc, gpu_uuid);
    }
    all.insert(all.end(), cis.begin(), cis.begin() + std::min<size_t>(n, cis.size()));
  }
  return Ok(std::move(all));
}

DriverResult<std::vector<DriverMigInstance>> NvmlGpuDriver::ListInstances(
    const std::string& gpu_uuid) {
  std::lock_guard lock(mu_);
  auto cached = Gpu(gpu_uuid);
  if (!cached.ok()) return cached.error();
  GpuCache& gpu = *cached.value();
  std::vector<DriverMigInstance> out;
  if (!gpu.gpu.mig_enabled) return Ok(std::move(out));
  for (const auto& profile : gpu.gpu.mig_profiles) {
    std::vector<nvmlGpuInstance_t> gis(std::max(1U, profile.instance_count));
    unsigned n = static_cast<unsigned>(gis.size());
    int rc = lib_->nvmlDeviceGetGpuInstances(gpu.handle, profile.nvml_id, gis.data(), &n);
    if (rc != NVML_SUCCESS) {
      return Fail("nvmlDeviceGetGpuInstances", rc, gpu_uuid + " profile " + profile.name);
    }
    for (unsigned i = 0; i < std::min<size_t>(n, gis.size()); ++i) {
      nvmlGpuInstanceInfo_t info{};
      if (rc = lib_->nvmlGpuInstanceGetInfo(gis[i], &info); rc != NVML_SUCCESS) {
        return Fail("nvmlGpuInstanceGetInfo", rc, gpu_uuid);
      }
      DriverMigInstance inst;
      inst.gpu_uuid = gpu_uuid;
      inst.gpu_instance_id = info.id;
      inst.profile = profile.name;
      inst.placement = model::Placement{info.placement.start, info.placement.size};
      auto cis = ComputeInstancesOf(gis[i], gpu_uuid);
      if (!cis.ok()) return cis.error();
      if (!cis.value().empty()) {
        nvmlComputeInstanceInfo_t ci{};
        if (rc = lib_->nvmlComputeInstanceGetInfo_v2(cis.value().front(), &ci);
            rc != NVML_SUCCESS) {
          return Fail("nvmlComputeInstanceGetInfo_v2", rc, gpu_uuid);
        }
        inst.has_compute_instance = true;
        inst.compute_instance_id = ci.id;
        auto uuid = MigUuidOf(gpu.handle, info.id, ci.id, gpu_uuid);
        if (!uuid.ok()) return uuid.error();
        inst.mig_uuid = uuid.value();
      }
      out.push_back(std::move(inst));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.placement.start < b.placement.start; });
  return Ok(std::move(out));
}

DriverResult<DriverMigInstance> NvmlGpuDriver::CreateGpuInstance(
    const std::string& gpu_uuid, const std::string& profile, const model::Placement& placement) {
  std::lock_guard lock(mu_);
  auto cached = Gpu(gpu_uuid);
  if (!cached.ok()) return cached.error();
  GpuCache& gpu = *cached.value();
  const std::string what = gpu_uuid + " profile " + profile + " at " +
                           std::to_string(placement.start) + ":" + std::to_string(placement.size);
  if (!gpu.gpu.mig_enabled) {
    return node::DriverError("nvmlDeviceGetMigMode", NVML_ERROR_NOT_SUPPORTED,
                             "cannot create " + what + ": MIG mode is not enabled");
  }
  auto p = std::find_if(gpu.gpu.mig_profiles.begin(), gpu.gpu.mig_profiles.end(),
                        [&](const auto& x) { return x.name == profile; });
  if (p == gpu.gpu.mig_profiles.end()) {
    return node::DriverError("nvmlDeviceGetGpuInstanceProfileInfo", NVML_ERROR_NOT_SUPPORTED,
                             "cannot create " + what + ": the GPU has no such profile");
  }
  if (std::find(p->placements.begin(), p->placements.end(), placement) == p->placements.end()) {
    return node::DriverError("nvmlDeviceGetGpuInstancePossiblePlacements_v2",
                             NVML_ERROR_INVALID_ARGUMENT,
                             "cannot create " + what + ": not a legal placement of the profile");
  }
  nvmlGpuInstancePlacement_t wanted{placement.start, placement.size};
  nvmlGpuInstance_t gi = nullptr;
  int rc = lib_->nvmlDeviceCreateGpuInstanceWithPlacement(gpu.handle, p->nvml_id, &wanted, &gi);
  if (rc != NVML_SUCCESS) {
    return Fail("nvmlDeviceCreateGpuInstanceWithPlacement", rc, what);
  }
  nvmlGpuInstanceInfo_t info{};
  if (rc = lib_->nvmlGpuInstanceGetInfo(gi, &info); rc != NVML_SUCCESS) {
    return Fail("nvmlGpuInstanceGetInfo", rc, what);
  }
  DriverMigInstance inst;
  inst.gpu_uuid = gpu_uuid;
  inst.gpu_instance_id = info.id;
  inst.profile = profile;
  inst.placement = placement;
  return Ok(std::move(inst));
}

DriverResult<DriverMigInstance> NvmlGpuDriver::CreateComputeInstance(
    const DriverMigInstance& instance) {
  std::lock_guard lock(mu_);
  auto cached = Gpu(instance.gpu_uuid);
  if (!cached.ok()) return cached.error();
  GpuCache& gpu = *cached.value();
  const std::string what = instance.gpu_uuid + " GPU instance " +
                           std::to_string(instance.gpu_instance_id) + " (" + instance.profile + ")";
  auto p = std::find_if(gpu.gpu.mig_profiles.begin(), gpu.gpu.mig_profiles.end(),
                        [&](const auto& x) { return x.name == instance.profile; });
  if (p == gpu.gpu.mig_profiles.end()) {
    return node::DriverError("nvmlDeviceGetGpuInstanceProfileInfo", NVML_ERROR_NOT_SUPPORTED,
                             what + ": the GPU has no such profile");
  }
  nvmlGpuInstance_t gi = nullptr;
  int rc = lib_->nvmlDeviceGetGpuInstanceById(gpu.handle, instance.gpu_instance_id, &gi);
  if (rc != NVML_SUCCESS) return Fail("nvmlDeviceGetGpuInstanceById", rc, what);
  const int ci_profile = node::ComputeProfileForSlices(p->slice_count);
  if (ci_profile < 0) {
    return node::DriverError("nvmlGpuInstanceGetComputeInstanceProfileInfo",
                             NVML_ERROR_NOT_SUPPORTED, what + ": no compute profile covers it");
  }
  nvmlComputeInstanceProfileInfo_t info{};
  rc = lib_->nvmlGpuInstanceGetComputeInstanceProfileInfo(
      gi, static_cast<unsigned>(ci_profile), kNvmlComputeInstanceEngineProfileShared, &info);
  if (rc != NVML_SUCCESS) {
    return Fail("nvmlGpuInstanceGetComputeInstanceProfileInfo", rc, what);
  }
  nvmlComputeInstance_t ci = nullptr;
  if (rc = lib_->nvmlGpuInstanceCreateComputeInstance(gi, info.id, &ci); rc != NVML_SUCCESS) {
    return Fail("nvmlGpuInstanceCreateComputeInstance", rc, what);
  }
  nvmlComputeInstanceInfo_t ci_info{};
  if (rc = lib_->nvmlComputeInstanceGetInfo_v2(ci, &ci_info); rc != NVML_SUCCESS) {
    return Fail("nvmlComputeInstanceGetInfo_v2", rc, what);
  }
  auto uuid = MigUuidOf(gpu.handle, instance.gpu_instance_id, ci_info.id, instance.gpu_uuid);
  if (!uuid.ok()) return uuid.error();
  DriverMigInstance out = instance;
  out.has_compute_instance = true;
  out.compute_instance_id = ci_info.id;
  out.mig_uuid = uuid.value();
  return Ok(std::move(out));
}

DriverResult<node::Empty> NvmlGpuDriver::DestroyInstance(const DriverMigInstance& instance) {
  std::lock_guard lock(mu_);
  auto cached = Gpu(instance.gpu_uuid);
  if (!cached.ok()) return cached.error();
  GpuCache& gpu = *cached.value();
  const std::string what = instance.gpu_uuid + " GPU instance " +
                           std::to_string(instance.gpu_instance_id) + " (" + instance.profile +
                           " at " + std::to_string(instance.placement.start) + ")";
  nvmlGpuInstance_t gi = nullptr;
  int rc = lib_->nvmlDeviceGetGpuInstanceById(gpu.handle, instance.gpu_instance_id, &gi);
  if (rc == NVML_ERROR_NOT_FOUND) return Ok(node::Empty{});
  if (rc != NVML_SUCCESS) return Fail("nvmlDeviceGetGpuInstanceById", rc, what);
  // GI ids are reused: destroy only the instance we mean, never a newer one with its id.
  nvmlGpuInstanceInfo_t info{};
  if (rc = lib_->nvmlGpuInstanceGetInfo(gi, &info); rc != NVML_SUCCESS) {
    return Fail("nvmlGpuInstanceGetInfo", rc, what);
  }
  if (info.placement.start != instance.placement.start ||
      info.placement.size != instance.placement.size) {
    return Ok(node::Empty{});
  }
  auto cis = ComputeInstancesOf(gi, instance.gpu_uuid);
  if (!cis.ok()) return cis.error();
  for (nvmlComputeInstance_t ci : cis.value()) {
    rc = lib_->nvmlComputeInstanceDestroy(ci);
    if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_FOUND) {
      return Fail("nvmlComputeInstanceDestroy", rc, what);
    }
  }
  rc = lib_->nvmlGpuInstanceDestroy(gi);
  if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_FOUND) {
    return Fail("nvmlGpuInstanceDestroy", rc, what);
  }
  return Ok(node::Empty{});
}

DriverResult<node::Empty> NvmlGpuDriver::WatchXid(const std::string& gpu_uuid) {
  std::lock_guard lock(mu_);
  if (events_ == nullptr) {
    if (int rc = lib_->nvmlEventSetCreate(&events_); rc != NVML_SUCCESS) {
      events_ = nullptr;
      return Fail("nvmlEventSetCreate", rc, "for " + gpu_uuid);
    }
  }
  auto cached = Gpu(gpu_uuid);
  if (!cached.ok()) return cached.error();
  const nvmlDevice_t handle = cached.value()->handle;
  if (registered_.count(handle) > 0) return Ok(node::Empty{});
  unsigned long long supported = 0;
  int rc = lib_->nvmlDeviceGetSupportedEventTypes(handle, &supported);
  if (rc != NVML_SUCCESS) return Fail("nvmlDeviceGetSupportedEventTypes", rc, gpu_uuid);
  const unsigned long long mask =
      supported & (kNvmlEventTypeXidCriticalError | kNvmlEventTypeDoubleBitEccError |
                   kNvmlEventTypeSingleBitEccError);
  rc = lib_->nvmlDeviceRegisterEvents(handle, mask, events_);
  // NOT_SUPPORTED: the GPU reports no such events (HAMi only logs it); nothing to retry.
  if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_SUPPORTED) {
    return Fail("nvmlDeviceRegisterEvents", rc, gpu_uuid);
  }
  registered_[handle] = gpu_uuid;
  return Ok(node::Empty{});
}

DriverResult<std::vector<node::XidEvent>> NvmlGpuDriver::WaitXid(int timeout_ms) {
  nvmlEventSet_t set = nullptr;
  {
    std::lock_guard lock(mu_);
    if (!registered_.empty()) set = events_;
  }
  if (set == nullptr) {
    // Nothing watched: wait anyway, so a caller's loop never spins.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::max(timeout_ms, 0)));
    return Ok(std::vector<node::XidEvent>{});
  }
  nvmlEventData_t data{};
  // The wait runs without the driver's lock: MIG calls go on meanwhile.
  int rc = lib_->nvmlEventSetWait_v2(set, &data, static_cast<unsigned>(timeout_ms));
  if (rc == NVML_ERROR_TIMEOUT) return Ok(std::vector<node::XidEvent>{});
  if (rc != NVML_SUCCESS) return Fail("nvmlEventSetWait_v2", rc, "all watched GPUs");
  if ((data.eventType & kNvmlEventTypeXidCriticalError) == 0)
    return Ok(std::vector<node::XidEvent>{});
  std::lock_guard lock(mu_);
  auto it = registered_.find(data.device);
  if (it == registered_.end()) return Ok(std::vector<node::XidEvent>{});
  return Ok(std::vector<node::XidEvent>{{it->second, data.eventData}});
}

DriverResult<uint32_t> NvmlGpuDriver::ComputeProcessCount(const std::string& gpu_uuid) {
  std::lock_guard lock(mu_);
  if (lib_->nvmlDeviceGetComputeRunningProcesses_v3 == nullptr) {
    return node::DriverError("nvmlDeviceGetComputeRunningProcesses_v3", NVML_ERROR_NOT_SUPPORTED,
                             gpu_uuid + ": the NVML library has no such function");
  }
  auto cached = Gpu(gpu_uuid);
  if (!cached.ok()) return cached.error();
  // Without a buffer NVML answers the count: SUCCESS when there is none, else INSUFFICIENT_SIZE.
  unsigned count = 0;
  int rc = lib_->nvmlDeviceGetComputeRunningProcesses_v3(cached.value()->handle, &count, nullptr);
  if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) {
    return Fail("nvmlDeviceGetComputeRunningProcesses_v3", rc, gpu_uuid);
  }
  return Ok(static_cast<uint32_t>(rc == NVML_SUCCESS ? 0 : count));
}

DriverResult<node::MigModeChange> NvmlGpuDriver::SetMigMode(const std::string& gpu_uuid,
                                                            bool enabled) {
  std::lock_guard lock(mu_);
  if (lib_->nvmlDeviceSetMigMode == nullptr) {
    return node::DriverError("nvmlDeviceSetMigMode", NVML_ERROR_NOT_SUPPORTED,
                             gpu_uuid + ": the NVML library has no such function");
  }
  auto cached = Gpu(gpu_uuid);
  if (!cached.ok()) return cached.error();
  const std::string what = gpu_uuid + std::string(enabled ? ": enabling" : ": disabling") + " MIG";
  nvmlReturn_t activation = NVML_SUCCESS;
  int rc = lib_->nvmlDeviceSetMigMode(cached.value()->handle,
                                      enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE,
                                      &activation);
  // The profiles belong to the old mode, and the driver may have reset the GPU: the handle and
  // everything read from it are read again.
  gpus_.erase(gpu_uuid);
  if (rc != NVML_SUCCESS) return Fail("nvmlDeviceSetMigMode", rc, what);
  nvmlDevice_t handle = nullptr;
  if (rc = lib_->nvmlDeviceGetHandleByUUID(gpu_uuid.c_str(), &handle); rc != NVML_SUCCESS) {
    return Fail("nvmlDeviceGetHandleByUUID", rc, what);
  }
  unsigned current = 0;
  unsigned pending = 0;
  if (rc = lib_->nvmlDeviceGetMigMode(handle, &current, &pending); rc != NVML_SUCCESS) {
    return Fail("nvmlDeviceGetMigMode", rc, what);
  }
  node::MigModeChange change;
  change.current_enabled = current == NVML_DEVICE_MIG_ENABLE;
  change.pending_enabled = pending == NVML_DEVICE_MIG_ENABLE;
  change.gpu_in_use = activation == NVML_ERROR_IN_USE;
  if (activation != NVML_SUCCESS) {
    change.activation = std::string(lib_->nvmlErrorString(activation)) + " (NVML code " +
                        std::to_string(activation) + ")";
  }
  return Ok(std::move(change));
}

void NvmlGpuDriver::ReadUsageValue(nvmlDevice_t device, const std::string& what,
                                   node::DriverUsageValue* out,
                                   std::vector<Error>* problems) const {
  nvmlMemory_t memory{};
  if (int rc = lib_->nvmlDeviceGetMemoryInfo(device, &memory); rc == NVML_SUCCESS) {
    out->memory_used_mib = memory.used >> 20;
    out->memory_total_mib = memory.total >> 20;
  } else if (rc != NVML_ERROR_NOT_SUPPORTED) {
    problems->push_back(Fail("nvmlDeviceGetMemoryInfo", rc, what));
  }
  if (lib_->nvmlDeviceGetUtilizationRates == nullptr) return;  // an old library: unknown
  nvmlUtilization_t utilization{};
  if (int rc = lib_->nvmlDeviceGetUtilizationRates(device, &utilization); rc == NVML_SUCCESS) {
    out->utilization_percent = std::min(utilization.gpu, 100U);
  } else if (rc != NVML_ERROR_NOT_SUPPORTED) {  // MIG devices: usually not supported
    problems->push_back(Fail("nvmlDeviceGetUtilizationRates", rc, what));
  }
}

void NvmlGpuDriver::ReadMigUsage(nvmlDevice_t device, const node::DriverGpu& gpu,
                                 node::DriverGpuUsage* out, std::vector<Error>* problems) const {
  unsigned max = 0;
  if (int rc = lib_->nvmlDeviceGetMaxMigDeviceCount(device, &max); rc != NVML_SUCCESS) {
    problems->push_back(Fail("nvmlDeviceGetMaxMigDeviceCount", rc, gpu.uuid));
    return;
  }
  for (unsigned i = 0; i < max; ++i) {
    nvmlDevice_t mig = nullptr;
    int rc = lib_->nvmlDeviceGetMigDeviceHandleByIndex(device, i, &mig);
    if (rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_INVALID_ARGUMENT) continue;  // sparse
    if (rc != NVML_SUCCESS) {
      problems->push_back(Fail("nvmlDeviceGetMigDeviceHandleByIndex", rc, gpu.uuid));
      continue;
    }
    node::DriverMigUsage m;
    std::array<char, kNvmlDeviceUuidBufferSize> text{};
    if (rc = lib_->nvmlDeviceGetGpuInstanceId(mig, &m.gpu_instance_id); rc != NVML_SUCCESS) {
      problems->push_back(Fail("nvmlDeviceGetGpuInstanceId", rc, gpu.uuid + " MIG device"));
      continue;
    }
    if (rc = lib_->nvmlDeviceGetComputeInstanceId(mig, &m.compute_instance_id);
        rc != NVML_SUCCESS) {
      problems->push_back(Fail("nvmlDeviceGetComputeInstanceId", rc, gpu.uuid + " MIG device"));
      continue;
    }
    if (rc = lib_->nvmlDeviceGetUUID(mig, text.data(), text.size()); rc != NVML_SUCCESS) {
      problems->push_back(Fail("nvmlDeviceGetUUID", rc, gpu.uuid + " MIG device"));
      continue;
    }
    m.mig_uuid = text.data();
    // The placement and profile of its GPU instance: what the scheduler names instances by.
    nvmlGpuInstance_t gi = nullptr;
    nvmlGpuInstanceInfo_t info{};
    const std::string what = gpu.uuid + " GPU instance " + std::to_string(m.gpu_instance_id);
    if (rc = lib_->nvmlDeviceGetGpuInstanceById(device, m.gpu_instance_id, &gi);
        rc != NVML_SUCCESS) {
      problems->push_back(Fail("nvmlDeviceGetGpuInstanceById", rc, what));
      continue;
    }
    if (rc = lib_->nvmlGpuInstanceGetInfo(gi, &info); rc != NVML_SUCCESS) {
      problems->push_back(Fail("nvmlGpuInstanceGetInfo", rc, what));
      continue;
    }
    m.placement = model::Placement{info.placement.start, info.placement.size};
    for (const auto& p : gpu.mig_profiles) {
      if (p.nvml_id == info.profileId) m.profile = p.name;
    }
    ReadUsageValue(mig, m.mig_uuid, &m.usage, problems);
    out->mig.push_back(std::move(m));
  }
  std::sort(out->mig.begin(), out->mig.end(),
            [](const auto& a, const auto& b) { return a.placement.start < b.placement.start; });
}

DriverResult<node::UsageReading> NvmlGpuDriver::ReadUsage() {
  std::vector<GpuCache> gpus;
  {
    std::lock_guard lock(mu_);
    for (const auto& [uuid, cached] : gpus_) gpus.push_back(cached);
  }
  std::sort(gpus.begin(), gpus.end(),
            [](const auto& a, const auto& b) { return a.gpu.index < b.gpu.index; });
  node::UsageReading out;
  for (const auto& g : gpus) {
    node::DriverGpuUsage u;
    u.index = g.gpu.index;
    u.uuid = g.gpu.uuid;
    u.name = g.gpu.name;
    ReadUsageValue(g.handle, g.gpu.uuid, &u.usage, &out.problems);
    if (g.gpu.mig_enabled) ReadMigUsage(g.handle, g.gpu, &u, &out.problems);
    out.gpus.push_back(std::move(u));
  }
  return Ok(std::move(out));
}

}  // namespace tessera::nvml
