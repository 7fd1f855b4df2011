#pragma once

// Fluent builders for tests: PodBuilder("ns/p").Gpu(2).GpuMem(8000).MigMode().Build().

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/codec/node_register.h"
#include "core/mig/catalog.h"
#include "core/model/annotations.h"
#include "core/model/device.h"
#include "core/model/pod.h"

namespace tessera::testing {

class ContainerBuilder {
 public:
  explicit ContainerBuilder(std::string name) { c_.name = std::move(name); }
  ContainerBuilder& Limit(const std::string& k, const std::string& v) {
    c_.limits[k] = v;
    return *this;
  }
  ContainerBuilder& Request(const std::string& k, const std::string& v) {
    c_.requests[k] = v;
    return *this;
  }
  ContainerBuilder& Gpu(int n) { return Limit("nvidia.com/gpu", std::to_string(n)); }
  ContainerBuilder& GpuMem(int mib) { return Limit("nvidia.com/gpumem", std::to_string(mib)); }
  ContainerBuilder& GpuMemPercent(int p) {
    return Limit("nvidia.com/gpumem-percentage", std::to_string(p));
  }
  ContainerBuilder& GpuCores(int p) { return Limit("nvidia.com/gpucores", std::to_string(p)); }
  model::Container Build() const { return c_; }

 private:
  model::Container c_;
};

class PodBuilder {
 public:
  explicit PodBuilder(const std::string& key) {
    auto slash = key.find('/');
    if (slash == std::string::npos) {
      pod_.name = key;
    } else {
      pod_.ns = key.substr(0, slash);
      pod_.name = key.substr(slash + 1);
    }
    pod_.uid = "uid-" + pod_.name;
  }
  // Adds one app container "c<N>" with these GPU resources.
  PodBuilder& Container(int gpus, int mem_mib = 0, int cores = -1) {
    pod_.containers.push_back(
        GpuContainer("c" + std::to_string(pod_.containers.size()), gpus, mem_mib, cores));
    return *this;
  }
  // Adds one init container "init<N>" with these GPU resources.
  PodBuilder& InitContainer(int gpus, int mem_mib = 0, int cores = -1) {
    pod_.init_containers.push_back(
        GpuContainer("init" + std::to_string(pod_.init_containers.size()), gpus, mem_mib, cores));
    return *this;
  }
  PodBuilder& With(model::Container c) {
    pod_.containers.push_back(std::move(c));
    return *this;
  }
  PodBuilder& Annotation(const std::string& k, const std::string& v) {
    pod_.annotations[k] = v;
    return *this;
  }
  PodBuilder& Priority(int32_t priority) {
    pod_.priority = priority;
    return *this;
  }
  PodBuilder& Label(const std::string& k, const std::string& v) {
    pod_.labels[k] = v;
    return *this;
  }
  PodBuilder& MigMode() { return Annotation("nvidia.com/vgpu-mode", "mig"); }
  // HAMi's placement annotations of one shared GPU (what filter writes): node and device.
  PodBuilder& PlacedOn(const std::string& node, const std::string& uuid, int mem_mib,
                       int cores = 10) {
    Annotation(std::string(model::annotations::kAssignedNode), node);
    return Annotation(
        std::string(model::annotations::kDevicesAllocated),
        uuid + ",NVIDIA," + std::to_string(mem_mib) + "," + std::to_string(cores) + ":;");
  }
  model::Pod Build() const { return pod_; }

 private:
  // Zero or negative values leave the resource out.
  static model::Container GpuContainer(std::string name, int gpus, int mem_mib, int cores) {
    ContainerBuilder c(std::move(name));
    if (gpus > 0) c.Gpu(gpus);
    if (mem_mib > 0) c.GpuMem(mem_mib);
    if (cores >= 0) c.GpuCores(cores);
    return c.Build();
  }

  model::Pod pod_;
};

inline model::GpuDevice SharingGpu(const std::string& uuid, int mem_mib = 32768, int numa = 0,
                                   uint32_t index = 0) {
  model::GpuDevice d;
  d.uuid = uuid;
  d.index = index;
  d.count = 10;
  d.total_mem_mib = mem_mib;
  d.total_cores = 100;
  d.type = "NVIDIA-Tesla V100-PCIE-32GB";
  d.numa = numa;
  d.mode = "hami-core";
  d.healthy = true;
  return d;
}

inline model::MigProfile Profile(const std::string& name, int mem, int core, uint32_t slices,
                                 std::vector<model::Placement> placements, int max_count = 0) {
  model::MigProfile p;
  p.name = name;
  p.memory_mib = mem;
  p.core = core;
  p.slice_count = slices;
  p.placements = std::move(placements);
  p.max_count = max_count;
  return p;
}

// The RTX PRO 6000 Blackwell in MIG mode, as HAMi's agent registers it with the chart allowlist.
inline model::GpuDevice RtxPro6000Mig(const std::string& uuid) {
  model::GpuDevice d;
  d.uuid = uuid;
  d.count = 4;
  d.total_mem_mib = 97887;
  d.total_cores = 100;
  d.type = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
  d.mode = "mig";
  d.healthy = true;
  d.mig_profiles = {Profile("1g.24gb", 24192, 25, 1, {{0, 3}, {3, 3}, {6, 3}, {9, 3}}, 4),
                    Profile("2g.48gb", 48512, 50, 2, {{0, 6}, {6, 6}}, 2),
                    Profile("4g.96gb", 97408, 100, 4, {{0, 12}}, 1)};
  return d;
}

// A100-40GB in MIG mode with its full profile table (without +me).
inline model::GpuDevice A100Mig(const std::string& uuid, uint32_t index = 0) {
  model::GpuDevice d;
  d.uuid = uuid;
  d.index = index;
  d.count = 7;
  d.total_mem_mib = 40960;
  d.total_cores = 100;
  d.type = "NVIDIA A100-SXM4-40GB";
  d.mode = "mig";
  d.healthy = true;
  d.mig_profiles = {
      Profile("1g.5gb", 4864, 15, 1, {{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}}, 7),
      Profile("1g.10gb", 9856, 15, 1, {{0, 2}, {2, 2}, {4, 2}, {6, 2}}, 4),
      Profile("2g.10gb", 9856, 29, 2, {{0, 2}, {2, 2}, {4, 2}}, 3),
      Profile("3g.20gb", 19968, 43, 3, {{0, 4}, {4, 4}}, 2),
      Profile("4g.20gb", 19968, 58, 4, {{0, 4}}, 1),
      Profile("7g.40gb", 40192, 100, 7, {{0, 8}}, 1)};
  return d;
}

// A GPU of a built-in model in MIG mode, with all of the model's profiles.
inline model::GpuDevice MigDeviceOf(const mig::GpuModelSpec& spec, const std::string& uuid,
                                    uint32_t index = 0) {
  model::GpuDevice d;
  d.uuid = uuid;
  d.index = index;
  d.count = 7;
  d.total_mem_mib = spec.memory_mib;
  d.total_cores = 100;
  d.type = "NVIDIA " + spec.model;
  d.mode = "mig";
  d.healthy = true;
  d.mig_profiles = spec.profiles;
  return d;
}

inline model::Node NodeWith(const std::string& name, const std::vector<model::GpuDevice>& gpus) {
  model::Node n;
  n.name = name;
  n.annotations[std::string(model::annotations::kNodeRegister)] = codec::EncodeNodeRegister(gpus);
  return n;
}

// A pod the scheduler bound to node n1 and the agent is to allocate (HAMi's bind phase
// "allocating"): `to_allocate` is its devices annotation, `mig` its MIG allocations (if any).
inline model::Pod AllocatingPod(const std::string& name, const std::string& to_allocate,
                                const std::string& mig = "") {
  namespace ann = model::annotations;
  model::Pod p;
  p.name = name;
  p.uid = "uid-" + name;
  p.node_name = "n1";
  p.phase = "Pending";
  p.resource_version = "10";
  p.containers.push_back(model::Container{"main", {}, {}, false});
  p.annotations[std::string(ann::kAssignedNode)] = "n1";
  p.annotations[std::string(ann::kBindPhase)] = "allocating";
  p.annotations[std::string(ann::kBindTime)] = "1700000000";
  p.annotations[std::string(ann::kDevicesToAllocate)] = to_allocate;
  p.annotations[std::string(ann::kDevicesAllocated)] = to_allocate;
  if (!mig.empty()) p.annotations[std::string(ann::kMigAllocations)] = mig;
  return p;
}

}  // namespace tessera::testing
