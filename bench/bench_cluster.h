#pragma once

// The benchmark cluster shared by the benchmarks: nodes of 8 A100-40GB GPUs, shared (hami-core)
// or in MIG mode, and the probe pods they schedule.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/codec/node_register.h"
#include "core/mig/catalog.h"
#include "core/model/annotations.h"
#include "core/model/device.h"
#include "core/model/pod.h"

namespace tessera {

constexpr int kGpusPerNode = 8;
constexpr int64_t kNow = 1767225600;  // 2026-01-01T00:00:00Z
constexpr char kModel[] = "A100-40GB";

enum class Kind { kSharing = 0, kMig = 1 };

inline const mig::GpuModelSpec& A100Spec() {
  static const mig::GpuModelCatalog* catalog = [] {
    auto c = mig::GpuModelCatalog::Builtin();
    if (!c.ok()) {
      std::fprintf(stderr, "built-in MIG table: %s\n", c.error().message.c_str());
      std::abort();
    }
    return new mig::GpuModelCatalog(std::move(c.value()));
  }();
  const mig::GpuModelSpec* spec = catalog->Find(kModel);
  if (spec == nullptr) {
    std::fprintf(stderr, "%s is not in the built-in MIG table\n", kModel);
    std::abort();
  }
  return *spec;
}

// 8 GPUs as HAMi's agent registers them (what `tessera simulate` shorthand nodes produce).
inline model::Node MakeNode(const std::string& name, Kind kind) {
  const mig::GpuModelSpec& spec = A100Spec();
  std::vector<model::GpuDevice> gpus;
  for (int i = 0; i < kGpusPerNode; ++i) {
    model::GpuDevice d;
    char uuid[64];
    std::snprintf(uuid, sizeof(uuid), "GPU-%s-%02d", name.c_str(), i);
    d.uuid = uuid;
    d.index = static_cast<uint32_t>(i);
    d.type = "NVIDIA A100-SXM4-40GB";
    d.total_mem_mib = spec.memory_mib;
    d.total_cores = 100;
    d.healthy = true;
    d.numa = i < kGpusPerNode / 2 ? 0 : 1;
    if (kind == Kind::kSharing) {
      d.mode = "hami-core";
      d.count = 10;
    } else {
      d.mode = "mig";
      d.mig_profiles = spec.profiles;
      for (const auto& p : spec.profiles) d.count = std::max(d.count, p.EffectiveMaxCount());
    }
    gpus.push_back(std::move(d));
  }
  model::Node node;
  node.name = name;
  node.annotations[std::string(model::annotations::kNodeRegister)] =
      codec::EncodeNodeRegister(gpus);
  return node;
}

// Sharing: gpu 1, gpumem 8000, gpucores 20. MIG: vgpu-mode mig, gpu 2, gpumem 9000.
inline model::Pod MakePod(const std::string& name, Kind kind, bool distinct = false) {
  model::Pod pod;
  pod.ns = "bench";
  pod.name = name;
  pod.uid = "uid-" + name;
  model::Container c;
  c.name = "main";
  if (kind == Kind::kSharing) {
    c.limits = {
        {"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "8000"}, {"nvidia.com/gpucores", "20"}};
  } else {
    c.limits = {{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem", "9000"}};
    pod.annotations[std::string(model::annotations::kVgpuMode)] = "mig";
  }
  if (distinct) pod.annotations[std::string(model::annotations::kNoUseGpuUuid)] = "GPU-none";
  pod.containers.push_back(std::move(c));
  return pod;
}

// A filler pod of the `varied` fill: `gpus` GPUs (MIG instances) of `mem` MiB and `cores` %.
inline model::Pod MakeSizedPod(const std::string& name, Kind kind, int gpus, int mem, int cores) {
  model::Pod pod = MakePod(name, kind);
  model::Container& c = pod.containers.front();
  c.limits = {{"nvidia.com/gpu", std::to_string(gpus)}, {"nvidia.com/gpumem", std::to_string(mem)}};
  if (cores > 0) c.limits["nvidia.com/gpucores"] = std::to_string(cores);
  return pod;
}

inline std::string NodeName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "node-%05d", i);
  return buf;
}

// The k-th of the pods bound one per GPU across `nodes` sharing nodes (node k % nodes, GPU
// k / nodes): 8000 MiB and 20% of one GPU, with HAMi's placement annotations, as the informer
// shows a running pod.
inline model::Pod BoundSharingPod(int k, int nodes) {
  model::Pod pod = MakePod("pod-" + std::to_string(k), Kind::kSharing);
  const int node = k % nodes;
  const int gpu = (k / nodes) % kGpusPerNode;
  char uuid[64];
  std::snprintf(uuid, sizeof(uuid), "GPU-%s-%02d", NodeName(node).c_str(), gpu);
  pod.node_name = NodeName(node);
  pod.phase = "Running";
  pod.annotations[std::string(model::annotations::kAssignedNode)] = pod.node_name;
  pod.annotations[std::string(model::annotations::kBindPhase)] = "success";
  pod.annotations[std::string(model::annotations::kDevicesAllocated)] =
      std::string(uuid) + ",NVIDIA,8000,20:;";
  return pod;
}

}  // namespace tessera
