#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "adapters/nvml/nvml_library.h"
#include "core/mig/catalog.h"
#include "core/node/gpu_driver.h"

namespace tessera::nvml {

// The GPU driver port over NVML. Thread-safe (one mutex: NVML MIG calls are not meant to run
// concurrently on one GPU, and the agent's own calls are few).
class NvmlGpuDriver final : public node::GpuDriver {
 public:
  // Calls nvmlInit_v2; nvmlShutdown runs in the destructor. `catalog` (may be null) gives known
  // models their table's profile names; other GPUs get go-nvlib's names.
  static Result<std::unique_ptr<NvmlGpuDriver>> Create(std::unique_ptr<NvmlLibrary> library,
                                                       const mig::GpuModelCatalog* catalog);
  ~NvmlGpuDriver() override;

  node::DriverResult<node::Discovery> Discover() override;
  node::DriverResult<std::vector<node::DriverMigInstance>> ListInstances(
      const std::string& gpu_uuid) override;
  node::DriverResult<node::DriverMigInstance> CreateGpuInstance(
      const std::string& gpu_uuid, const std::string& profile,
      const model::Placement& placement) override;
  node::DriverResult<node::DriverMigInstance> CreateComputeInstance(
      const node::DriverMigInstance& instance) override;
  node::DriverResult<node::Empty> DestroyInstance(const node::DriverMigInstance& instance) override;
  node::DriverResult<node::Empty> WatchXid(const std::string& gpu_uuid) override;
  node::DriverResult<std::vector<node::XidEvent>> WaitXid(int timeout_ms) override;
  // nvmlDeviceGetComputeRunningProcesses_v3 and nvmlDeviceSetMigMode: NOT_SUPPORTED when the
  // library lacks them (both are optional symbols).
  node::DriverResult<uint32_t> ComputeProcessCount(const std::string& gpu_uuid) override;
  node::DriverResult<node::MigModeChange> SetMigMode(const std::string& gpu_uuid,
                                                     bool enabled) override;

  // Reads without the driver's lock (held only to copy the discovered GPUs' handles), so a
  // usage read never holds up Allocate's MIG calls. NVML is thread-safe.
  node::DriverResult<node::UsageReading> ReadUsage() override;

  // Called for every failed NVML call (function, code): the agent's error metrics.
  void set_error_observer(std::function<void(const std::string&, int)> observer) {
    observer_ = std::move(observer);
  }

 private:
  NvmlGpuDriver(std::unique_ptr<NvmlLibrary> library, const mig::GpuModelCatalog* catalog)
      : lib_(std::move(library)), catalog_(catalog) {}

  struct GpuCache {
    nvmlDevice_t handle = nullptr;
    node::DriverGpu gpu;
  };
  Error Fail(const char* function, int code, const std::string& what) const;
  node::DriverResult<node::DriverGpu> ReadGpu(unsigned index, nvmlDevice_t handle);
  // The GPU's handle and profiles, discovered once per MIG-mode lifetime.
  node::DriverResult<GpuCache*> Gpu(const std::string& uuid);
  node::DriverResult<std::string> MigUuidOf(nvmlDevice_t device, unsigned gi, unsigned ci,
                                            const std::string& gpu_uuid);
  // Memory and utilisation of one GPU or MIG device; a failure other than NOT_SUPPORTED is
  // one problem, and leaves the value unknown.
  void ReadUsageValue(nvmlDevice_t device, const std::string& what, node::DriverUsageValue* out,
                      std::vector<Error>* problems) const;
  void ReadMigUsage(nvmlDevice_t device, const node::DriverGpu& gpu, node::DriverGpuUsage* out,
                    std::vector<Error>* problems) const;
  node::DriverResult<std::vector<nvmlComputeInstance_t>> ComputeInstancesOf(
      nvmlGpuInstance_t gi, const std::string& gpu_uuid);

  std::unique_ptr<NvmlLibrary> lib_;
  const mig::GpuModelCatalog* catalog_;
  std::mutex mu_;
  std::map<std::string, GpuCache> gpus_;
  nvmlEventSet_t events_ = nullptr;                 // created on the first WatchXid
  std::map<nvmlDevice_t, std::string> registered_;  // GPUs whose XIDs the set receives
  std::function<void(const std::string&, int)> observer_;
};

}  // namespace tessera::nvml
