#pragma once

// An in-memory GpuDriver for the agent's decisions: GPUs as discovery reports them, compute
// processes per GPU, and MIG mode changes that follow the driver's rules as the test sets them
// (at once, pending a reset, or refused). Counts the calls that change something. No MIG
// instances: tests of realize and reconcile use the simulated NVML (support/nvml_sim.h).

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/node/gpu_driver.h"

namespace tessera::testing {

class FakeGpuDriver : public node::GpuDriver {
 public:
  std::vector<node::DriverGpu> gpus;
  std::vector<Error> problems;
  std::map<std::string, uint32_t> processes;  // by GPU UUID; absent: idle
  std::optional<Error> discover_failure;
  std::optional<Error> set_mig_mode_failure;
  // What SetMigMode does on an idle GPU: apply at once (Hopper), or leave it pending (Ampere).
  bool set_mig_mode_needs_reset = false;
  std::vector<std::string> set_mig_mode_calls;  // GPU UUIDs
  int discoveries = 0;

  node::DriverGpu& Gpu(const std::string& uuid) {
    for (auto& g : gpus) {
      if (g.uuid == uuid) return g;
    }
    throw std::out_of_range(uuid);
  }

  node::DriverResult<node::Discovery> Discover() override {
    ++discoveries;
    if (discover_failure) return *discover_failure;
    return node::Discovery{gpus, problems};
  }
  node::DriverResult<std::vector<node::DriverMigInstance>> ListInstances(
      const std::string&) override {
    return std::vector<node::DriverMigInstance>{};
  }
  node::DriverResult<node::DriverMigInstance> CreateGpuInstance(const std::string& gpu,
                                                                const std::string&,
                                                                const model::Placement&) override {
    return node::DriverError("create", 3, gpu + ": fake");
  }
  node::DriverResult<node::DriverMigInstance> CreateComputeInstance(
      const node::DriverMigInstance& i) override {
    return node::DriverError("create", 3, i.gpu_uuid);
  }
  node::DriverResult<node::Empty> DestroyInstance(const node::DriverMigInstance&) override {
    return node::Empty{};
  }
  node::DriverResult<node::Empty> WatchXid(const std::string&) override { return node::Empty{}; }
  node::DriverResult<std::vector<node::XidEvent>> WaitXid(int) override {
    return std::vector<node::XidEvent>{};
  }

  node::DriverResult<uint32_t> ComputeProcessCount(const std::string& gpu) override {
    auto it = processes.find(gpu);
    return it == processes.end() ? 0U : it->second;
  }
  node::DriverResult<node::MigModeChange> SetMigMode(const std::string& uuid,
                                                     bool enabled) override {
    set_mig_mode_calls.push_back(uuid);
    if (set_mig_mode_failure) {
      return *set_mig_mode_failure;
    }
    node::DriverGpu& gpu = Gpu(uuid);
    node::MigModeChange change;
    gpu.mig_pending_enabled = enabled;
    const bool busy = processes.count(uuid) > 0 && processes[uuid] > 0;
    if (busy) {
      change.gpu_in_use = true;
      change.activation = "In use by another client (NVML code 19)";
    } else if (set_mig_mode_needs_reset) {
      change.activation = "GPU requires reset (NVML code 16)";
    } else {
      gpu.mig_enabled = enabled;
      gpu.mig_profiles = enabled ? profiles_when_enabled : std::vector<node::DriverMigProfile>{};
    }
    change.current_enabled = gpu.mig_enabled;
    change.pending_enabled = gpu.mig_pending_enabled;
    return change;
  }

  // The profiles a GPU reports once MIG mode is on.
  std::vector<node::DriverMigProfile> profiles_when_enabled;
};

}  // namespace tessera::testing
