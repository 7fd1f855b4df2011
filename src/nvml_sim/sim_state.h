#pragma once

// The simulated driver's state: GPUs described by a small JSON file, their GPU and compute
// instances kept in the same file, so they outlive the process that created them exactly as
// instances on real hardware outlive a crashed agent (docs/agent.md, "Simulated NVML").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/mig/catalog.h"

namespace tessera::nvml_sim {

struct SimComputeInstance {
  uint32_t id = 0;
  uint32_t profile_id = 0;  // NVML_COMPUTE_INSTANCE_PROFILE_* (ids equal the enum)
  uint32_t slice_count = 0;
  std::string mig_uuid;
  uint32_t processes = 0;                   // running processes: destroy answers IN_USE while > 0
  std::optional<uint64_t> memory_used_mib;  // "memoryUsedMiB": replaces the synthetic value
};

struct SimGpuInstance {
  uint32_t id = 0;
  int profile = -1;  // index into the model's profiles
  uint32_t start = 0;
  uint32_t size = 0;
  std::vector<SimComputeInstance> compute_instances;
};

struct SimGpu {
  std::string uuid;
  std::string name;  // what nvmlDeviceGetName answers
  std::string pci_bus_id;
  uint64_t memory_mib = 0;
  const mig::GpuModelSpec* model = nullptr;  // nullptr: not MIG-capable
  bool mig_enabled = false;                  // MIG mode now ("migMode")
  bool mig_pending_enabled = false;          // after the next reset or reboot ("migModePending")
  uint32_t processes = 0;  // compute processes on the whole GPU ("processes"): it is not idle
  std::vector<SimGpuInstance> gpu_instances;
  // "utilization" and "memoryUsedMiB": replace the synthetic values (not in MIG mode).
  std::optional<uint32_t> utilization;
  std::optional<uint64_t> memory_used_mib;
};

struct SimState {
  std::vector<SimGpu> gpus;
  uint64_t next_serial = 1;  // MIG UUIDs are unique across restarts
  uint64_t usage_seed = 0;   // "usageSeed": varies the synthetic usage, reproducibly
};

// The synthetic usage the simulated NVML reports (docs/agent.md, "Simulated NVML"): the same
// state gives the same values, every call and every process. A GPU or compute instance without
// processes is idle (0 % and 0 MiB); with n processes a GPU is busy 25*n % plus up to 24 % by a
// hash of its UUID and the seed (at most 100), and uses total*min(n,4)/8 MiB plus up to 1023 MiB
// by the same hash (at most its memory); a compute instance with n processes uses
// memory*min(n,2)/4 MiB plus up to 255 MiB by a hash of its MIG UUID. Values in the state file
// replace them. In MIG mode the GPU reports no utilisation (nullopt: NOT_SUPPORTED, as the
// driver does), nor do its MIG devices, and its memory used is its instances' sum.
std::optional<uint32_t> SimUtilization(const SimState& state, const SimGpu& gpu);
uint64_t SimMemoryUsedMib(const SimState& state, const SimGpu& gpu);
uint64_t SimMigMemoryUsedMib(const SimState& state, const SimGpu& gpu, const SimGpuInstance& gi,
                             const SimComputeInstance& ci);

// Reads the state file. Errors name the file and the field.
Result<SimState> LoadState(const std::string& path, const mig::GpuModelCatalog& catalog);
// Writes it atomically (temporary file, fsync, rename), so a crash leaves the old or the new.
Status SaveState(const std::string& path, const SimState& state);

// Driver rules (mig-hardware.md section 5). Each returns an NVML return code.
int CheckCreateGpuInstance(const SimGpu& gpu, int profile, uint32_t start, uint32_t size);
// The compute-instance profile with this enum inside `gi`, or nullopt when not valid there
// (rule R12: C <= G, and C == G or 2C <= G + 1).
std::optional<uint32_t> ComputeSlicesOf(uint32_t ci_profile);
bool ComputeProfileFits(uint32_t gi_slices, uint32_t ci_slices);

// nvmlDeviceSetMigMode's rules (mig-hardware.md 4): the pending mode takes the new one; it
// becomes current at once only on an idle GPU of a generation that needs no reset (Hopper and
// later). Ampere (A100, A30) keeps it pending until a reset (activation RESET_REQUIRED); a GPU
// with processes keeps it pending (activation IN_USE). MIG off while GPU instances exist: IN_USE.
int SetMigMode(SimGpu& gpu, unsigned mode, int* activation);
// Compute processes on the GPU: its own and those of its compute instances.
uint32_t ComputeProcesses(const SimGpu& gpu);
// A reboot, GPU reset or driver reload: instances and processes gone, the pending mode current.
void Reboot(SimGpu& gpu);

// Next GPU-instance id: the smallest unused one, as the driver reuses ids.
uint32_t NextGpuInstanceId(const SimGpu& gpu);
std::string NewMigUuid(const SimGpu& gpu, uint64_t serial);

}  // namespace tessera::nvml_sim
