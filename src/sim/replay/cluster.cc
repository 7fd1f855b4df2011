#include "sim/replay/cluster.h"

#include <algorithm>

#include "core/codec/node_register.h"
#include "core/model/annotations.h"

namespace tessera::sim::replay {

int GpuAffinityOf(const TracePod& pod) {
  if (pod.num_gpu == 0) return kNoAffinity;
  if (pod.num_gpu == 1 && pod.gpu_milli < kMilliPerGpu) return kShareAffinity;
  return pod.num_gpu;
}

std::string StateNodeName(int node) { return "n" + std::to_string(node); }

namespace {

std::string GpuUuid(int node, int gpu) {
  return "GPU-" + std::to_string(node) + "-" + std::to_string(gpu);
}

}  // namespace

ReplayCluster::ReplayCluster(const std::vector<TraceNode>& nodes, TieBreak tie_break)
    : tie_break_(tie_break) {
  nodes_.reserve(nodes.size());
  for (const TraceNode& trace_node : nodes) {
    NodeState node;
    node.name = trace_node.name;
    node.cpu_capacity = node.cpu_free = trace_node.cpu_milli;
    node.memory_capacity = node.memory_free = trace_node.memory_mib;
    node.gpu_offset = static_cast<int>(gpu_free_.size());
    node.gpu_count = std::max(trace_node.gpus, 0);
    node.gpu_free_total = node.gpu_count * kMilliPerGpu;
    node.fully_free_gpus = node.gpu_count;
    if (node.gpu_count > 0) {
      auto it = std::find(model_names_.begin(), model_names_.end(), trace_node.model);
      node.model_id = static_cast<int>(it - model_names_.begin());
      if (it == model_names_.end()) model_names_.push_back(trace_node.model);
    }
    gpu_free_.insert(gpu_free_.end(), node.gpu_count, static_cast<int32_t>(kMilliPerGpu));
    total_gpus_ += node.gpu_count;
    nodes_.push_back(std::move(node));
  }
  placement_ = std::make_unique<PlacementState>(StateNodes());
}

std::vector<model::Node> ReplayCluster::StateNodes() const {
  std::vector<model::Node> out;
  out.reserve(nodes_.size());
  for (int i = 0; i < node_count(); ++i) {
    model::Node node;
    node.name = StateNodeName(i);
    node.allocatable["cpu"] = std::to_string(CpuCapacity(i)) + "m";
    if (GpuCount(i) > 0) {
      std::vector<model::GpuDevice> gpus;
      for (int g = 0; g < GpuCount(i); ++g) {
        model::GpuDevice d;
        d.uuid = GpuUuid(i, g);
        d.index = static_cast<uint32_t>(g);
        d.count = 1000;  // the trace has no task limit per GPU
        d.total_mem_mib = kMibPerGpu;
        d.total_cores = 100;
        // HAMi's NVIDIA backend takes only register entries whose type names NVIDIA; the
        // trace's models ("T4", "V100M16") do not, and a pod's gpu_spec still matches them
        // (nvidia.com/use-gputype matches a part of the type).
        d.type = "NVIDIA-" + model_names_[ModelId(i)];
        d.mode = "hami-core";
        d.healthy = true;
        gpus.push_back(std::move(d));
      }
      node.annotations[std::string(model::annotations::kNodeRegister)] =
          codec::EncodeNodeRegister(gpus);
    }
    out.push_back(std::move(node));
  }
  return out;
}

ModelMask ReplayCluster::AllowedModels(const TracePod& pod) const {
  // IsNodeAccessibleToPodByType: an empty spec accepts every model.
  ModelMask allowed(model_names_.size(), pod.gpu_spec.empty() ? 1 : 0);
  for (const std::string& model : pod.gpu_spec) {
    auto it = std::find(model_names_.begin(), model_names_.end(), model);
    if (it != model_names_.end()) allowed[it - model_names_.begin()] = 1;
  }
  return allowed;
}

bool ReplayCluster::FitsGpu(int node, const TracePod& pod, const ModelMask& allowed) const {
  if (pod.num_gpu == 0) return true;
  const NodeState& n = nodes_[node];
  if (n.gpu_count < pod.num_gpu || n.model_id < 0) return false;
  if (n.model_id >= static_cast<int>(allowed.size()) || !allowed[n.model_id]) return false;
  if (pod.gpu_milli >= kMilliPerGpu) return n.fully_free_gpus >= pod.num_gpu;
  int fitting = 0;
  for (int32_t free : GpuFree(node)) fitting += free >= pod.gpu_milli ? 1 : 0;
  return fitting >= pod.num_gpu;
}

std::vector<int> ReplayCluster::FeasibleNodes(const TracePod& pod) const {
  ModelMask allowed = AllowedModels(pod);
  std::vector<int> feasible;
  for (int node = 0; node < node_count(); ++node) {
    if (Fits(node, pod, allowed)) feasible.push_back(node);
  }
  return feasible;
}

Status ReplayCluster::CheckAllowed(int node, const TracePod& pod, std::span<const int> gpus) const {
  if (node < 0 || node >= node_count()) {
    return Error{"allocate " + pod.name + ": no node " + std::to_string(node)};
  }
  const NodeState& n = nodes_[node];
  auto refuse = [&](const std::string& why) {
    return Status(Error{"allocate " + pod.name + " on " + n.name + ": " + why});
  };
  if (!Fits(node, pod)) return refuse("the pod does not fit");
  if (static_cast<int>(gpus.size()) != pod.num_gpu) {
    return refuse("expected " + std::to_string(pod.num_gpu) + " GPU indices, got " +
                  std::to_string(gpus.size()));
  }
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i] < 0 || gpus[i] >= n.gpu_count) {
      return refuse("no GPU " + std::to_string(gpus[i]));
    }
    if (std::find(gpus.begin(), gpus.begin() + i, gpus[i]) != gpus.begin() + i) {
      return refuse("GPU " + std::to_string(gpus[i]) + " given twice");
    }
    if (gpu_free_[n.gpu_offset + gpus[i]] < pod.gpu_milli) {
      return refuse("GPU " + std::to_string(gpus[i]) + " has only " +
                    std::to_string(gpu_free_[n.gpu_offset + gpus[i]]) + " milli free");
    }
  }
  return Status::Ok();
}

Status ReplayCluster::Allocate(int node, const TracePod& pod, std::span<const int> gpus,
                               const std::string& key) {
  if (Status allowed = CheckAllowed(node, pod, gpus); !allowed.ok()) return allowed;
  state::PodReservation r;
  r.key = key.empty() ? "replay/pod-" + std::to_string(allocations_) : key;
  r.uid = r.key;
  r.controller_kind = "ReplicaSet";  // as TesseraReplayPod says of every replayed pod
  r.node = StateNodeName(node);
  r.cpu_milli = pod.cpu_milli;
  if (!gpus.empty()) {
    r.devices.emplace_back();
    for (int gpu : gpus) {
      r.devices[0].push_back(codec::ContainerDevice{GpuUuid(node, gpu), "NVIDIA",
                                                    static_cast<int32_t>(pod.gpu_milli), 0});
    }
  }
  placement_->Reserve(std::move(r));
  ++allocations_;
  Take(node, pod, gpus);
  return Status::Ok();
}

Status ReplayCluster::Record(const std::string& key, const TracePod& pod) {
  std::optional<Choice> placed = PlacementOf(key);
  if (!placed) return Error{"record " + pod.name + ": no reservation " + key};
  if (Status allowed = CheckAllowed(placed->node, pod, placed->gpus); !allowed.ok()) {
    placement_->Release(key);
    return allowed;
  }
  Take(placed->node, pod, placed->gpus);
  return Status::Ok();
}

Result<state::PodReservation> ReplayCluster::Release(const std::string& key, const TracePod& pod) {
  std::optional<Choice> placed = PlacementOf(key);
  if (!placed) return Error{"release " + pod.name + ": no reservation " + key};
  state::PodReservation was = *placement_->state().pod(key);
  placement_->Release(key);
  Give(placed->node, pod, placed->gpus);
  return was;
}

Status ReplayCluster::Adopt(const TracePod& pod, state::PodReservation reservation) {
  Choice choice;
  choice.node = placement_->NodeIndex(reservation.node);
  if (choice.node < 0) return Error{"adopt " + pod.name + ": no node " + reservation.node};
  for (const auto& slot : reservation.devices) {
    for (const auto& device : slot) {
      choice.gpus.push_back(std::stoi(device.uuid.substr(device.uuid.rfind('-') + 1)));
    }
  }
  if (Status allowed = CheckAllowed(choice.node, pod, choice.gpus); !allowed.ok()) return allowed;
  placement_->Reserve(std::move(reservation));
  Take(choice.node, pod, choice.gpus);
  return Status::Ok();
}

void ReplayCluster::Give(int node, const TracePod& pod, std::span<const int> gpus) {
  NodeState& n = nodes_[node];
  n.cpu_free += pod.cpu_milli;
  n.memory_free += pod.memory_mib;
  for (int gpu : gpus) {
    int32_t& free = gpu_free_[n.gpu_offset + gpu];
    free += static_cast<int32_t>(pod.gpu_milli);
    if (free == kMilliPerGpu) ++n.fully_free_gpus;
  }
  n.gpu_free_total += pod.TotalGpuMilli();
  allocated_gpu_milli_ -= pod.TotalGpuMilli();
  if (int tag = GpuAffinityOf(pod); tag != kNoAffinity) {
    auto it = std::find_if(n.affinities.begin(), n.affinities.end(),
                           [tag](const auto& entry) { return entry.first == tag; });
    if (it != n.affinities.end() && --it->second == 0) n.affinities.erase(it);
  }
  ++n.version;
}

std::optional<Choice> ReplayCluster::PlacementOf(const std::string& key) const {
  const state::PodReservation* pod = placement_->state().pod(key);
  if (pod == nullptr) return std::nullopt;
  Choice choice;
  choice.node = placement_->NodeIndex(pod->node);
  if (choice.node < 0) return std::nullopt;
  for (const auto& slot : pod->devices) {
    for (const auto& device : slot) {
      choice.gpus.push_back(std::stoi(device.uuid.substr(device.uuid.rfind('-') + 1)));
    }
  }
  return choice;
}

void ReplayCluster::Take(int node, const TracePod& pod, std::span<const int> gpus) {
  NodeState& n = nodes_[node];
  n.cpu_free -= pod.cpu_milli;
  n.memory_free -= pod.memory_mib;
  for (int gpu : gpus) {
    int32_t& free = gpu_free_[n.gpu_offset + gpu];
    if (free == kMilliPerGpu) --n.fully_free_gpus;
    free -= static_cast<int32_t>(pod.gpu_milli);
  }
  n.gpu_free_total -= pod.TotalGpuMilli();
  allocated_gpu_milli_ += pod.TotalGpuMilli();
  if (int tag = GpuAffinityOf(pod); tag != kNoAffinity) {
    auto it = std::find_if(n.affinities.begin(), n.affinities.end(),
                           [tag](const auto& entry) { return entry.first == tag; });
    if (it == n.affinities.end()) {
      n.affinities.emplace_back(tag, 1);
    } else {
      ++it->second;
    }
  }
  ++n.version;
}

}  // namespace tessera::sim::replay
