#include "core/sched/node_scoring.h"

#include <algorithm>
#include <limits>

#include "core/common/strings.h"

namespace tessera::sched {

void CapacityOf(const state::NodeState& node, NodeCapacity* out) {
  NodeCapacity& c = *out;
  const size_t n = node.devices.size();
  c.gpu_free_mem.resize(n);
  c.gpu_total_mem.resize(n);
  c.gpu_free_cores.resize(n);
  c.gpu_usable.resize(n);
  c.gpu_type.clear();
  for (size_t i = 0; i < n; ++i) {
    const auto& d = node.devices[i];
    const auto& u = node.usage[i];
    c.gpu_total_mem[i] = d.total_mem_mib;
    c.gpu_free_mem[i] = static_cast<int32_t>(std::max<int64_t>(0, d.total_mem_mib - u.used_mem));
    c.gpu_free_cores[i] = std::max(0, d.total_cores - u.used_cores);
    c.gpu_usable[i] = d.healthy && u.Trusted() && !d.IsMig() && node.cordoned.count(d.uuid) == 0 &&
                      u.used < d.count;
    if (c.gpu_type.empty() && c.gpu_usable[i]) c.gpu_type = node.types_upper[i];
  }
  c.cpu_free_milli.reset();
  if (node.cpu_allocatable_milli) {
    c.cpu_free_milli = *node.cpu_allocatable_milli - node.cpu_used_milli;
  }
}

NodeCapacity CapacityOf(const state::NodeState& node) {
  NodeCapacity c;
  CapacityOf(node, &c);
  return c;
}

std::optional<DemandShape> ShapeOf(const PodRequest& request, int64_t cpu_milli,
                                   const std::string& gpu_type) {
  DemandShape s;
  s.cpu_milli = cpu_milli;
  s.gpu_type = ToUpper(Trim(gpu_type));
  for (size_t i = 0; i < request.slots.size(); ++i) {
    if (request.IsInit(i) || request.slots[i].Empty()) continue;
    const ContainerRequest& r = request.slots[i];
    s.gpus += r.nums;
    s.gpu_mem_mib = std::max(s.gpu_mem_mib, r.mem_mib);
    s.gpu_cores = std::max(s.gpu_cores, r.cores);
  }
  if (s.gpus == 0) return std::nullopt;
  return s;
}

void SingleGpuRanks(const state::NodeState& node, const NodeCapacity& capacity,
                    const ContainerRequest& request, int64_t cpu_milli,
                    const PreparedTarget& target, std::vector<double>* ranks_out,
                    NodeFragmentationWorkspace* workspace) {
  const size_t n = node.devices.size();
  std::vector<double>& ranks = *ranks_out;
  ranks.assign(n, std::numeric_limits<double>::infinity());
  for (size_t g = 0; g < n; ++g) {
    if (!capacity.gpu_usable[g] || node.devices[g].IsMig()) continue;
    int32_t mem = request.mem_mib;
    if (mem == 0) {
      mem = static_cast<int32_t>(static_cast<int64_t>(capacity.gpu_total_mem[g]) *
                                 request.mem_percent / 100);
    }
    if (capacity.gpu_free_mem[g] < mem || capacity.gpu_free_cores[g] < request.cores) continue;
    // GPUs in the same state give the same answer: reuse it.
    bool reused = false;
    for (size_t h = 0; h < g; ++h) {
      if (ranks[h] != std::numeric_limits<double>::infinity() &&
          capacity.gpu_free_mem[h] == capacity.gpu_free_mem[g] &&
          capacity.gpu_free_cores[h] == capacity.gpu_free_cores[g] &&
          capacity.gpu_total_mem[h] == capacity.gpu_total_mem[g]) {
        ranks[g] = ranks[h];
        reused = true;
        break;
      }
    }
    if (reused) continue;
    // The GPU has the room (checked above), so the take is not clipped at 0.
    const GpuTake take{static_cast<int32_t>(g), mem, request.cores};
    ranks[g] = workspace != nullptr
                   ? workspace->After(take, cpu_milli)
                   : NodeFragmentationAfter(capacity, target, {&take, 1}, cpu_milli);
  }
}

std::vector<double> SingleGpuRanks(const state::NodeState& node, const NodeCapacity& capacity,
                                   const ContainerRequest& request, int64_t cpu_milli,
                                   const PreparedTarget& target) {
  std::vector<double> ranks;
  SingleGpuRanks(node, capacity, request, cpu_milli, target, &ranks);
  return ranks;
}

}  // namespace tessera::sched
