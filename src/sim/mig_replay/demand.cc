#include "sim/mig_replay/demand.h"

#include <iterator>
#include <map>
#include <span>
#include <utility>

namespace tessera::sim::mig_replay {

uint32_t ComputeSlicesNeeded(const RequestType& type, uint32_t compute_slices) {
  const int64_t num = static_cast<int64_t>(type.share_num) * compute_slices;
  const int64_t c = (num + type.share_den - 1) / type.share_den;
  return static_cast<uint32_t>(c < 1 ? 1 : c);
}

namespace {

int IntendedByMemory(const mig::GpuMigModel& gpu, int32_t memory_mib) {
  int best = -1;
  for (int p = 0; p < static_cast<int>(gpu.profiles().size()); ++p) {
    if (!gpu.Allowed(p)) continue;
    const model::MigProfile& profile = gpu.profiles()[p];
    if (profile.memory_mib < memory_mib) continue;
    if (best < 0 ||
        std::pair(profile.memory_mib, profile.slice_count) <
            std::pair(gpu.profiles()[best].memory_mib, gpu.profiles()[best].slice_count)) {
      best = p;
    }
  }
  return best;
}

}  // namespace

int IntendedProfile(const mig::GpuMigModel& gpu, const RequestType& type) {
  if (type.memory_mib > 0) return IntendedByMemory(gpu, type.memory_mib);
  const uint32_t needed = ComputeSlicesNeeded(type, gpu.compute_slices());
  int best = -1;
  for (int p = 0; p < static_cast<int>(gpu.profiles().size()); ++p) {
    if (!gpu.Allowed(p)) continue;
    const model::MigProfile& profile = gpu.profiles()[p];
    if (profile.slice_count < needed) continue;
    if (best < 0) {
      best = p;
      continue;
    }
    const model::MigProfile& b = gpu.profiles()[best];
    if (std::pair(profile.slice_count, profile.memory_mib) <
        std::pair(b.slice_count, b.memory_mib)) {
      best = p;
    }
  }
  return best;
}

Workload MakeSyntheticWorkload(SyntheticMix mix) {
  // Probabilities of 1g, 2g, 3g, 4g, 7g. small-heavy is the fragmentation-prone case: many 1g
  // among larger instances that need aligned free runs.
  static constexpr int kSizes[] = {1, 2, 3, 4, 7};
  Workload w;
  std::vector<double> p;
  switch (mix) {
    case SyntheticMix::kUniform:
      w.name = std::string(kWorkloadUniform);
      p = {0.2, 0.2, 0.2, 0.2, 0.2};
      break;
    case SyntheticMix::kSmallHeavy:
      w.name = std::string(kWorkloadSmallHeavy);
      p = {0.6, 0.1, 0.1, 0.1, 0.1};
      break;
    case SyntheticMix::kLargeHeavy:
      w.name = std::string(kWorkloadLargeHeavy);
      p = {0.1, 0.1, 0.2, 0.3, 0.3};
      break;
  }
  for (int i = 0; i < 5; ++i) {
    w.types.push_back(RequestType{kSizes[i], 7, 1, std::to_string(kSizes[i]) + "g"});
  }
  w.probabilities = std::move(p);
  return w;
}

namespace {

// A workload of memory requests: (MiB per instance, instances, probability) per type.
struct MemoryEntry {
  int32_t memory_mib;
  int32_t count;
  double probability;
};
Workload MemoryWorkload(std::string_view name, std::span<const MemoryEntry> entries) {
  Workload w;
  w.name = std::string(name);
  for (const MemoryEntry& e : entries) {
    RequestType t;
    t.memory_mib = e.memory_mib;
    t.count = e.count;
    t.label = std::to_string(e.memory_mib) + "MiB x" + std::to_string(e.count);
    w.types.push_back(std::move(t));
    w.probabilities.push_back(e.probability);
  }
  return w;
}

}  // namespace

Workload MakeMemoryMixWorkload() {
  // The smallest profile of at least this memory: on A100-40GB 1g.5gb, 3g.20gb, 7g.40gb; on
  // H100-80GB 1g.10gb, 2g.20gb, 3g.40gb; on RTX PRO 6000 1g.24gb, 1g.24gb, 2g.48gb.
  static constexpr MemoryEntry kEntries[] = {{4000, 1, 0.45},  {4000, 2, 0.15},  {19000, 1, 0.15},
                                             {19000, 2, 0.05}, {40000, 1, 0.15}, {40000, 2, 0.05}};
  return MemoryWorkload(kWorkloadMemoryMix, kEntries);
}

namespace {

struct ShareEntry {
  int32_t slices;  // of 7
  int32_t count;
  double probability;
};

// "3/7" for one instance, "1/7 x3" for several.
Workload ShareWorkload(std::string_view name, std::span<const ShareEntry> entries) {
  Workload w;
  w.name = std::string(name);
  for (const ShareEntry& e : entries) {
    std::string label = std::to_string(e.slices) + "/7";
    if (e.count > 1) label += " x" + std::to_string(e.count);
    w.types.push_back(RequestType{e.slices, 7, e.count, std::move(label)});
    w.probabilities.push_back(e.probability);
  }
  return w;
}

// One instance of every profile size, half the pods: the multi-instance mixes' background.
constexpr ShareEntry kSingleInstances[] = {
    {1, 1, 0.15}, {2, 1, 0.10}, {3, 1, 0.10}, {4, 1, 0.08}, {7, 1, 0.07}};

}  // namespace

Workload MakeMultiSmallWorkload() {
  std::vector<ShareEntry> entries(std::begin(kSingleInstances), std::end(kSingleInstances));
  entries.insert(entries.end(), {{1, 2, 0.25}, {1, 3, 0.15}, {1, 4, 0.10}});
  return ShareWorkload(kWorkloadMultiSmall, entries);
}

Workload MakeMultiMixedWorkload() {
  std::vector<ShareEntry> entries(std::begin(kSingleInstances), std::end(kSingleInstances));
  entries.insert(entries.end(), {{1, 2, 0.12},
                                 {1, 3, 0.08},
                                 {1, 4, 0.06},
                                 {2, 2, 0.10},
                                 {2, 3, 0.04},
                                 {3, 2, 0.06},
                                 {4, 2, 0.04}});
  return ShareWorkload(kWorkloadMultiMixed, entries);
}

Workload MakeMultiMemoryWorkload() {
  // 4000 MiB is a 1g on every model: 1g.5gb (A100-40GB), 1g.10gb (A100-80GB, H100-80GB),
  // 1g.18gb (H200), 1g.23gb (B200), 1g.24gb (RTX PRO 6000); 19000 and 40000 MiB map as in
  // memory-mix.
  static constexpr MemoryEntry kEntries[] = {{4000, 1, 0.25}, {19000, 1, 0.15}, {40000, 1, 0.10},
                                             {4000, 2, 0.25}, {4000, 3, 0.15},  {4000, 4, 0.10}};
  return MemoryWorkload(kWorkloadMultiMemory, kEntries);
}

bool NamesMemory(const Workload& workload) {
  for (const auto& t : workload.types) {
    if (t.memory_mib <= 0) return false;
  }
  return !workload.types.empty();
}

Result<Workload> MakeOpenbWorkload(const std::vector<replay::TracePod>& pods) {
  std::map<std::pair<int64_t, int>, int64_t> counts;  // (gpu_milli, instances) -> pods
  for (const auto& pod : pods) {
    if (pod.num_gpu <= 0) continue;  // CPU-only: nothing to place on a GPU
    if (pod.gpu_milli >= replay::kMilliPerGpu) {
      counts[{replay::kMilliPerGpu, pod.num_gpu}]++;
    } else {
      counts[{pod.gpu_milli, 1}]++;
    }
  }
  if (counts.empty()) return Error{"openb workload: the pod list has no GPU pod"};
  Workload w;
  w.name = std::string(kWorkloadOpenb);
  int64_t total = 0;
  for (const auto& [key, n] : counts) total += n;
  for (const auto& [key, n] : counts) {
    const auto [milli, instances] = key;
    RequestType t;
    t.share_num = static_cast<int32_t>(milli);
    t.share_den = static_cast<int32_t>(replay::kMilliPerGpu);
    t.count = instances;
    t.label = milli == replay::kMilliPerGpu ? "gpu x" + std::to_string(instances)
                                            : "milli " + std::to_string(milli);
    w.types.push_back(std::move(t));
    w.probabilities.push_back(static_cast<double>(n) / static_cast<double>(total));
  }
  return w;
}

std::vector<Arrival> SampleArrivals(const Workload& workload, size_t n, std::mt19937_64& rng) {
  std::discrete_distribution<int> pick(workload.probabilities.begin(),
                                       workload.probabilities.end());
  std::vector<Arrival> out(n);
  for (auto& a : out) a.type = pick(rng);
  return out;
}

std::vector<Arrival> SamplePoissonArrivals(const Workload& workload, size_t n, double rate,
                                           std::mt19937_64& rng) {
  std::discrete_distribution<int> pick(workload.probabilities.begin(),
                                       workload.probabilities.end());
  std::exponential_distribution<double> gap(rate);
  std::exponential_distribution<double> life(1.0);
  std::vector<Arrival> out(n);
  double now = 0;
  for (auto& a : out) {
    now += gap(rng);
    a.time = now;
    a.type = pick(rng);
    a.lifetime = life(rng);
  }
  return out;
}

}  // namespace tessera::sim::mig_replay
