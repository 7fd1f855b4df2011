#pragma once

// The NVIDIA driver's /proc files that name device-node minors, for CDI specs of MIG devices:
// `<root>/nvidia/gpus/<PCI bus id>/information` (each GPU's UUID and device minor) and
// `<root>/nvidia-caps/mig-minors` (the minors of the MIG capability nodes). `root` is
// /proc/driver on a node; a node without the driver (the simulated NVML) has neither.

#include <string>
#include <vector>

#include "core/node/cdi_spec.h"

namespace tessera::files {

struct NvidiaProcMinors {
  node::NvidiaDeviceMinors minors;
  std::vector<std::string> problems;  // files missing or unreadable, naming them
};

NvidiaProcMinors ReadNvidiaDeviceMinors(const std::string& proc_driver_root);

}  // namespace tessera::files
