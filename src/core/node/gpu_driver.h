#pragma once

// The node agent's port to the GPU driver: what tessera needs from NVML, in its own terms. The
// NVML adapter (adapters/nvml) implements it over dlopen("libnvidia-ml.so.1") or the simulated
// library; the agent's logic (src/agent) and its tests see only this interface.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/model/device.h"

namespace tessera::node {

// One GPU-instance profile as the driver reports it.
struct DriverMigProfile {
  std::string name;          // go-nvlib style: "1g.24gb", "1g.10gb+me", "2g.48gb-me"
  uint32_t nvml_enum = 0;    // NVML_GPU_INSTANCE_PROFILE_*
  uint32_t nvml_id = 0;      // the hardware profile id (info.id)
  uint32_t slice_count = 0;  // compute slices
  uint32_t instance_count = 0;
  uint32_t sm_count = 0;
  uint32_t memory_mib = 0;
  std::vector<model::Placement> placements;
};

struct DriverGpu {
  uint32_t index = 0;
  std::string uuid;
  std::string name;  // nvmlDeviceGetName
  uint64_t memory_mib = 0;
  std::string pci_bus_id;  // "00000000:3B:00.0"
  bool mig_capable = false;
  bool mig_enabled = false;                    // MIG mode now (nvmlDeviceGetMigMode's current)
  bool mig_pending_enabled = false;            // after the next GPU reset or reboot (its pending)
  std::vector<DriverMigProfile> mig_profiles;  // filled when MIG is enabled
};

// One GPU instance and, when it has one, its compute instance (tessera creates one CI covering
// the whole GI; a GI with several CIs lists the first).
struct DriverMigInstance {
  std::string gpu_uuid;
  uint32_t gpu_instance_id = 0;
  std::string profile;  // DriverMigProfile::name
  model::Placement placement;
  bool has_compute_instance = false;
  uint32_t compute_instance_id = 0;
  std::string mig_uuid;  // of the compute instance's MIG device; "" without one
  bool operator==(const DriverMigInstance&) const = default;
};

// The driver's results use the project's one error vocabulary (core/common/result.h).
template <class T>
using DriverResult = Result<T>;

// The codes of the NVML calls that callers branch on (NVML's values; Error::origin_code).
inline constexpr int kDriverNotSupported = 3;  // a call the driver (or GPU) does not implement
inline constexpr int kDriverNoPermission = 4;  // e.g. nvmlDeviceSetMigMode without root
inline constexpr int kDriverNotFound = 6;
inline constexpr int kDriverGpuIsLost = 15;
inline constexpr int kDriverInUse = 19;

// A driver error: `message` names the GPU and what was attempted; the NVML function and its
// return code are kept as the error's origin, and the code says what kind of failure it is.
inline Error DriverError(std::string function, int nvml_code, std::string message) {
  ErrorCode code = ErrorCode::kUnavailable;  // GPU lost, unknown, timeouts: may pass
  switch (nvml_code) {
    case 2:  // INVALID_ARGUMENT
    case 7:  // INSUFFICIENT_SIZE
      code = ErrorCode::kInvalidInput;
      break;
    case 1:   // UNINITIALIZED
    case 18:  // LIB_RM_VERSION_MISMATCH
      code = ErrorCode::kInternal;
      break;
    case kDriverNotSupported:
    case 13:  // FUNCTION_NOT_FOUND
      code = ErrorCode::kUnsupported;
      break;
    case kDriverNoPermission:
      code = ErrorCode::kPermissionDenied;
      break;
    case kDriverNotFound:
      code = ErrorCode::kNotFound;
      break;
    case kDriverInUse:
    case 23:  // INSUFFICIENT_RESOURCES
      code = ErrorCode::kConflict;
      break;
    default:
      break;
  }
  return Error{std::move(message), code, std::move(function), nvml_code};
}

struct Empty {};

// What asking the driver for a MIG mode left. On Ampere (A100, A30) the new mode waits for a GPU
// reset or reboot (pending); from Hopper on an idle GPU takes it at once (mig-hardware.md 4).
struct MigModeChange {
  bool current_enabled = false;  // the mode now
  bool pending_enabled = false;  // the mode after the next GPU reset or reboot
  bool gpu_in_use = false;       // the driver's activation status: the GPU was not idle
  std::string activation;        // that status in words, when it is not a success
};

// What discovery found: the GPUs it could read, and one error per GPU it could not (such a GPU
// is left out rather than failing the whole node, unlike HAMi's panic, hami-node.md W10).
struct Discovery {
  std::vector<DriverGpu> gpus;
  std::vector<Error> problems;
};

// A critical driver event (XID) on a GPU.
struct XidEvent {
  std::string gpu_uuid;
  uint64_t xid = 0;
};

// What NVML measured on one GPU or MIG device: nullopt where it reported nothing (the call is
// not supported there, as utilisation on MIG devices usually is not, or it failed): unknown,
// never 0.
struct DriverUsageValue {
  std::optional<uint32_t> utilization_percent;  // nvmlDeviceGetUtilizationRates' gpu, 0..100
  std::optional<uint64_t> memory_used_mib;      // nvmlDeviceGetMemoryInfo's used
  std::optional<uint64_t> memory_total_mib;     // and its total
};

// One MIG device (compute instance) of a GPU in MIG mode.
struct DriverMigUsage {
  std::string mig_uuid;
  uint32_t gpu_instance_id = 0;
  uint32_t compute_instance_id = 0;
  std::string profile;         // DriverMigProfile::name; "" when unknown
  model::Placement placement;  // of its GPU instance (memory slices)
  DriverUsageValue usage;
};

struct DriverGpuUsage {
  uint32_t index = 0;
  std::string uuid;
  std::string name;  // nvmlDeviceGetName
  DriverUsageValue usage;
  std::vector<DriverMigUsage> mig;  // in MIG mode: its MIG devices
};

// One read of every GPU discovery found; a GPU or MIG device that could not be read keeps its
// unknown values and adds one error to `problems` (the agent counts them).
struct UsageReading {
  std::vector<DriverGpuUsage> gpus;
  std::vector<Error> problems;
};

class GpuDriver {
 public:
  virtual ~GpuDriver() = default;

  virtual DriverResult<Discovery> Discover() = 0;
  // Every GPU instance of the GPU, of every profile.
  virtual DriverResult<std::vector<DriverMigInstance>> ListInstances(
      const std::string& gpu_uuid) = 0;
  // Creates only the GPU instance, at exactly this placement (never another).
  virtual DriverResult<DriverMigInstance> CreateGpuInstance(const std::string& gpu_uuid,
                                                            const std::string& profile,
                                                            const model::Placement& placement) = 0;
  // Creates the compute instance covering the whole GPU instance; returns it with its MIG UUID.
  virtual DriverResult<DriverMigInstance> CreateComputeInstance(
      const DriverMigInstance& instance) = 0;
  // Destroys the compute instances, then the GPU instance. Already gone counts as success.
  virtual DriverResult<Empty> DestroyInstance(const DriverMigInstance& instance) = 0;
  // From now on, WaitXid also receives this GPU's XID events (already watched: success). Each
  // GPU is registered on its own, so one GPU's failure leaves the others watched.
  virtual DriverResult<Empty> WatchXid(const std::string& gpu_uuid) = 0;
  // Waits up to `timeout_ms` for the next XID event on a watched GPU; an empty list on timeout,
  // and (after the timeout) when no GPU is watched.
  virtual DriverResult<std::vector<XidEvent>> WaitXid(int timeout_ms) = 0;

  // Compute processes running on the GPU (0: idle): MIG mode is changed only on an idle GPU.
  // The defaults answer "not supported", for drivers (and fakes) without these calls.
  virtual DriverResult<uint32_t> ComputeProcessCount(const std::string& gpu_uuid) {
    return node::DriverError("ComputeProcessCount", kDriverNotSupported,
                             gpu_uuid + ": not supported by this driver");
  }
  // Asks for MIG mode on (or off). Needs root; the driver may reset the GPU to apply it.
  virtual DriverResult<MigModeChange> SetMigMode(const std::string& gpu_uuid, bool /*enabled*/) {
    return node::DriverError("SetMigMode", kDriverNotSupported,
                             gpu_uuid + ": not supported by this driver");
  }
  // Utilisation and memory used of every GPU the last discovery found, and of their MIG
  // devices. Read-only; must not wait on the MIG calls (Allocate's path) longer than a copy.
  virtual DriverResult<UsageReading> ReadUsage() {
    return node::DriverError("ReadUsage", kDriverNotSupported, "not supported by this driver");
  }
};

}  // namespace tessera::node
