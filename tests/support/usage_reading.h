#pragma once

#include <cstdint>
#include <optional>

#include "core/node/gpu_driver.h"

namespace tessera::testing {

// One NVML usage read: a Tesla T4 (37% busy, 12000 of 15360 MiB) and an A100 in MIG mode whose
// one 3g.20gb device (GPU instance 2, slices 4+4) uses 8000 of 19968 MiB; `mig_utilization` is
// that device's utilisation (NVML often reports none).
inline node::UsageReading SampleUsageReading(std::optional<uint32_t> mig_utilization) {
  node::UsageReading r;
  node::DriverGpuUsage t4;
  t4.index = 0;
  t4.uuid = "GPU-t4";
  t4.name = "Tesla T4";
  t4.usage = {37U, 12000U, 15360U};
  r.gpus.push_back(t4);
  node::DriverGpuUsage a100;
  a100.index = 1;
  a100.uuid = "GPU-mig";
  a100.name = "NVIDIA A100-SXM4-40GB";
  a100.usage = {std::nullopt, 8000U, 40960U};
  node::DriverMigUsage m;
  m.mig_uuid = "MIG-1";
  m.gpu_instance_id = 2;
  m.profile = "3g.20gb";
  m.placement = {4, 4};
  m.usage = {mig_utilization, 8000U, 19968U};
  a100.mig.push_back(m);
  r.gpus.push_back(a100);
  return r;
}

}  // namespace tessera::testing
