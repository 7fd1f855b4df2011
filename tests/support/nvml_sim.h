#pragma once

// A simulated NVML for one test: a fresh state file in a temporary directory, the environment
// pointed at it, and the library opened through the production dlopen path.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "adapters/nvml/nvml_gpu_driver.h"
#include "adapters/nvml/nvml_library.h"
#include "core/mig/catalog.h"

namespace tessera::testing {

class SimulatedNvml {
 public:
  // `gpus_json`: the "gpus" array of the state file.
  explicit SimulatedNvml(const std::string& gpus_json, const std::string& faults = "") {
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera-nvml-sim-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    state_ = (dir_ / "state.json").string();
    std::ofstream(state_) << "{\"gpus\": " << gpus_json << "}\n";
    ::setenv("TESSERA_NVML_SIM_STATE", state_.c_str(), 1);
    SetFaults(faults);
  }
  ~SimulatedNvml() {
    ::unsetenv("TESSERA_NVML_SIM_FAULTS");
    std::filesystem::remove_all(dir_);
  }

  static void SetFaults(const std::string& faults) {
    if (faults.empty()) {
      ::unsetenv("TESSERA_NVML_SIM_FAULTS");
    } else {
      ::setenv("TESSERA_NVML_SIM_FAULTS", faults.c_str(), 1);
    }
  }

  static std::unique_ptr<nvml::NvmlLibrary> Library() {
    auto lib = nvml::NvmlLibrary::Open(TESSERA_NVML_SIM_PATH);
    if (!lib.ok()) ADD_FAILURE() << lib.error().message;
    return lib.ok() ? std::move(lib.value()) : nullptr;
  }

  // A driver over a fresh nvmlInit (which re-reads the state file and the fault plan).
  std::unique_ptr<nvml::NvmlGpuDriver> Driver() {
    auto driver = nvml::NvmlGpuDriver::Create(Library(), &Catalog());
    if (!driver.ok()) ADD_FAILURE() << driver.error().message;
    return driver.ok() ? std::move(driver.value()) : nullptr;
  }

  static const mig::GpuModelCatalog& Catalog() {
    static const mig::GpuModelCatalog catalog = mig::GpuModelCatalog::Builtin().value();
    return catalog;
  }

  const std::string& state_path() const { return state_; }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  // A reboot (or GPU reset, driver reload): every instance is gone for the next process, i.e.
  // at the next nvmlInit once every earlier driver is closed.
  void Reboot() const { std::ofstream(state_ + ".reboot") << "\n"; }
  void AppendXid(const std::string& gpu, int xid) const {
    std::ofstream(state_ + ".events", std::ios::app) << gpu << " " << xid << "\n";
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path dir_;
  std::string state_;
};

// One RTX PRO 6000 Blackwell in MIG mode: 1g.24gb at 0, 3, 6, 9 (4-slice model, 12-unit grid).
inline std::string RtxPro6000(const std::string& uuid = "GPU-rtx-0") {
  return R"({"uuid": ")" + uuid + R"(", "model": "RTX-PRO-6000-Blackwell-96GB", "migMode": true})";
}

}  // namespace tessera::testing
