#include "sim/replay/policy.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "sim/replay/workload.h"

namespace tessera::sim::replay {
namespace {

// gpushareutils.MaxSpecCpu / MaxSpecGpu: the normalisers of BestFit and DotProd.
constexpr double kMaxSpecCpu = 128000;
constexpr double kMaxSpecGpu = 8000;
constexpr int64_t kMaxSpecGpuMilli = 8000;
constexpr int64_t kMaxNodeScore = 100;  // framework.MaxNodeScore
constexpr int64_t kMinNodeScore = 0;

bool IsSharing(const TracePod& pod) { return pod.num_gpu == 1 && pod.gpu_milli < kMilliPerGpu; }

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// A policy that scores every feasible node with one score plugin and lets Open-Gpu-Share pick
// the GPUs: the shape of every baseline except Random.
class ScoringPolicy : public ChoosingPolicy {
 public:
  using ScoreFn = int64_t (*)(const ReplayCluster&, int, const TracePod&);
  ScoringPolicy(std::string_view name, ScoreFn score) : name_(name), score_(score) {}

  std::string_view Name() const override { return name_; }

  std::optional<Choice> Choose(const ReplayCluster& cluster, const TracePod& pod,
                               std::mt19937_64& rng) override {
    const ModelMask allowed = cluster.AllowedModels(pod);
    scored_.clear();
    for (int node = 0; node < cluster.node_count(); ++node) {
      if (cluster.Fits(node, pod, allowed)) scored_.push_back({node, score_(cluster, node, pod)});
    }
    std::optional<int> node = PickTopScore(scored_, cluster.tie_break(), rng);
    if (!node) return std::nullopt;
    return Choice{*node, SelectGpusBestFit(cluster, *node, pod)};
  }

 private:
  std::string_view name_;
  ScoreFn score_;
  std::vector<ScoredNode> scored_;
};

// random_score.go: PreScore draws one feasible node, which alone scores 100; gpusel "random".
class RandomPolicy : public ChoosingPolicy {
 public:
  std::string_view Name() const override { return "random"; }
  std::optional<Choice> Choose(const ReplayCluster& cluster, const TracePod& pod,
                               std::mt19937_64& rng) override {
    const ModelMask allowed = cluster.AllowedModels(pod);
    feasible_.clear();
    for (int node = 0; node < cluster.node_count(); ++node) {
      if (cluster.Fits(node, pod, allowed)) feasible_.push_back(node);
    }
    if (feasible_.empty()) return std::nullopt;
    const int node = feasible_[UniformIndex(rng, feasible_.size())];
    return Choice{node, SelectGpusRandom(cluster, node, pod, rng)};
  }

 private:
  std::vector<int> feasible_;
};

// FGD, with the node scores cached per (node version, pod shape): a placement changes one node,
// so most scores of the next pod of the same shape are still valid.
class FgdPolicy : public ChoosingPolicy {
 public:
  explicit FgdPolicy(const TargetWorkload& target) : scorer_(target) {}
  std::string_view Name() const override { return "fgd"; }

  std::optional<Choice> Choose(const ReplayCluster& cluster, const TracePod& pod,
                               std::mt19937_64& rng) override {
    if (bound_ != &cluster || cache_.size() != static_cast<size_t>(cluster.node_count())) {
      bound_ = &cluster;
      cache_.assign(cluster.node_count(), {});
      shape_ids_.clear();
    }
    // The score depends on CPU, per-GPU milli and GPU count only (the model filter is separate).
    const auto key = std::make_tuple(pod.cpu_milli, pod.gpu_milli, pod.num_gpu);
    auto [it, inserted] = shape_ids_.try_emplace(key, static_cast<int>(shape_ids_.size()));
    const size_t shape = static_cast<size_t>(it->second);

    const ModelMask allowed = cluster.AllowedModels(pod);
    scored_.clear();
    for (int node = 0; node < cluster.node_count(); ++node) {
      if (!cluster.Fits(node, pod, allowed)) continue;
      std::vector<Entry>& entries = cache_[node];
      if (entries.size() <= shape) entries.resize(shape + 1);
      Entry& entry = entries[shape];
      if (entry.version_plus_one != cluster.Version(node) + 1) {
        FgdScorer::Evaluation evaluation = scorer_.Evaluate(cluster, node, pod);
        entry.version_plus_one = cluster.Version(node) + 1;
        entry.score = evaluation.score;
        entry.sharing_gpu = IsSharing(pod) && !evaluation.gpus.empty() ? evaluation.gpus[0] : -1;
      }
      scored_.push_back({node, entry.score});
    }
    std::optional<int> node = PickTopScore(scored_, cluster.tie_break(), rng);
    if (!node) return std::nullopt;
    if (IsSharing(pod)) {
      const int gpu = cache_[*node][shape].sharing_gpu;
      if (gpu < 0) return std::nullopt;
      return Choice{*node, {gpu}};
    }
    return Choice{*node, SelectGpusExclusive(cluster, *node, pod)};
  }

 private:
  struct Entry {
    uint64_t version_plus_one = 0;
    int64_t score = 0;
    int sharing_gpu = -1;
  };
  struct KeyHash {
    size_t operator()(const std::tuple<int64_t, int64_t, int>& k) const {
      size_t h = std::hash<int64_t>()(std::get<0>(k));
      h = h * 1000003u ^ std::hash<int64_t>()(std::get<1>(k));
      return h * 1000003u ^ std::hash<int>()(std::get<2>(k));
    }
  };

  FgdScorer scorer_;
  const ReplayCluster* bound_ = nullptr;
  std::vector<std::vector<Entry>> cache_;
  std::unordered_map<std::tuple<int64_t, int64_t, int>, int, KeyHash> shape_ids_;
  std::vector<ScoredNode> scored_;
};

// GPU milli after placing the pod as NodeResource.Sub does: each requested GPU goes to the
// fitting GPU with the least free milli (stable ascending order of free milli).
std::vector<int32_t> FreeAfterPacking(std::span<const int32_t> free, const TracePod& pod) {
  std::vector<int32_t> after(free.begin(), free.end());
  if (pod.num_gpu == 0) return after;
  std::vector<int> order(after.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return after[a] < after[b]; });
  int needed = pod.num_gpu;
  for (int index : order) {
    if (needed == 0) break;
    if (pod.gpu_milli <= after[index]) {
      after[index] -= static_cast<int32_t>(pod.gpu_milli);
      --needed;
    }
  }
  return after;
}

}  // namespace

Result<PlaceOutcome> ChoosingPolicy::Place(ReplayCluster& cluster, const TracePod& pod,
                                           const std::string& key, std::mt19937_64& rng) {
  std::optional<Choice> choice = Choose(cluster, pod, rng);
  if (!choice) return PlaceOutcome::kRefused;
  if (Status placed = cluster.Allocate(choice->node, pod, choice->gpus, key); !placed.ok()) {
    return Error{placed.message()};
  }
  return PlaceOutcome::kPlaced;
}

const std::vector<std::string>& BuiltinPolicyNames() {
  static const std::vector<std::string> names = {"random",     "dotprod", "gpuclustering",
                                                 "gpupacking", "bestfit", "fgd"};
  return names;
}

Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const TargetWorkload& target,
                                           const PolicyFactories* extra) {
  if (extra != nullptr) {
    if (auto it = extra->find(name); it != extra->end()) {
      std::unique_ptr<Policy> policy = it->second ? it->second(target) : nullptr;
      if (!policy) return Error{"policy '" + std::string(name) + "': its factory made nothing"};
      return policy;
    }
  }
  if (name == "random") return std::unique_ptr<Policy>(new RandomPolicy());
  if (name == "dotprod") {
    return std::unique_ptr<Policy>(new ScoringPolicy("dotprod", &DotProductScore));
  }
  if (name == "gpuclustering") {
    return std::unique_ptr<Policy>(new ScoringPolicy("gpuclustering", &GpuClusteringScore));
  }
  if (name == "gpupacking") {
    return std::unique_ptr<Policy>(new ScoringPolicy("gpupacking", &GpuPackingScore));
  }
  if (name == "bestfit")
    return std::unique_ptr<Policy>(new ScoringPolicy("bestfit", &BestFitScore));
  if (name == "fgd") return std::unique_ptr<Policy>(new FgdPolicy(target));
  std::string known;
  for (const auto& builtin : BuiltinPolicyNames()) known += (known.empty() ? "" : ", ") + builtin;
  if (extra != nullptr) {
    for (const auto& [extra_name, factory] : *extra) known += ", " + extra_name;
  }
  return Error{"unknown policy '" + std::string(name) + "' (known: " + known + ")"};
}

std::optional<int> PickTopScore(std::span<const ScoredNode> scored, TieBreak tie_break,
                                std::mt19937_64& rng) {
  if (scored.empty()) return std::nullopt;
  int64_t best = scored[0].score;
  size_t ties = 0;
  for (const ScoredNode& s : scored) {
    if (s.score > best) {
      best = s.score;
      ties = 1;
    } else if (s.score == best) {
      ++ties;
    }
  }
  size_t pick = 0;
  if (tie_break == TieBreak::kUniform && ties > 1) pick = UniformIndex(rng, ties);
  for (const ScoredNode& s : scored) {
    if (s.score == best && pick-- == 0) return s.node;
  }
  return std::nullopt;  // not reached
}

std::vector<int> SelectGpusExclusive(const ReplayCluster& cluster, int node, const TracePod& pod) {
  std::vector<int> gpus;
  if (pod.num_gpu == 0) return gpus;
  std::span<const int32_t> free = cluster.GpuFree(node);
  for (int i = 0; i < static_cast<int>(free.size()) && static_cast<int>(gpus.size()) < pod.num_gpu;
       ++i) {
    if (free[i] >= kMilliPerGpu) gpus.push_back(i);
  }
  if (static_cast<int>(gpus.size()) < pod.num_gpu) gpus.clear();
  return gpus;
}

std::vector<int> SelectGpusBestFit(const ReplayCluster& cluster, int node, const TracePod& pod) {
  if (!IsSharing(pod)) return SelectGpusExclusive(cluster, node, pod);
  std::span<const int32_t> free = cluster.GpuFree(node);
  int best = -1;
  for (int i = 0; i < static_cast<int>(free.size()); ++i) {
    if (free[i] >= pod.gpu_milli && (best < 0 || free[i] < free[best])) best = i;
  }
  if (best < 0) return {};
  return {best};
}

std::vector<int> SelectGpusRandom(const ReplayCluster& cluster, int node, const TracePod& pod,
                                  std::mt19937_64& rng) {
  if (!IsSharing(pod)) return SelectGpusExclusive(cluster, node, pod);
  std::span<const int32_t> free = cluster.GpuFree(node);
  std::vector<int> fitting;
  for (int i = 0; i < static_cast<int>(free.size()); ++i) {
    if (free[i] >= pod.gpu_milli) fitting.push_back(i);
  }
  if (fitting.empty()) return {};
  return {fitting[UniformIndex(rng, fitting.size())]};
}

// best_fit_score.go, getBestFitScore.
int64_t BestFitScore(const ReplayCluster& cluster, int node, const TracePod& pod) {
  const std::array<double, 2> free = {static_cast<double>(cluster.CpuFree(node)),
                                      static_cast<double>(cluster.GpuFreeTotal(node))};
  const std::array<double, 2> request = {static_cast<double>(pod.cpu_milli),
                                         static_cast<double>(pod.TotalGpuMilli())};
  const std::array<double, 2> max_spec = {kMaxSpecCpu, kMaxSpecGpu};
  const std::array<double, 2> weights = {0.5, 0.5};
  double score = 0;
  for (size_t i = 0; i < free.size(); ++i) {
    if (free[i] < request[i]) return kMinNodeScore;  // filtered out before; never reached
    score += (free[i] - request[i]) / max_spec[i] * weights[i];
  }
  score = (1.0 - score) * static_cast<double>(kMaxNodeScore);
  // NormalizeScore rescales [lowest, highest] onto [0, 100]; with integer scores already in
  // [0, 100] that map is strictly increasing, so it never changes which nodes score highest.
  return static_cast<int64_t>(score);
}

// dot_product_score.go with -dimext merge -norm max: one (CPU, total GPU) vector per node.
int64_t DotProductScore(const ReplayCluster& cluster, int node, const TracePod& pod) {
  if (cluster.CpuFree(node) < pod.cpu_milli) return kMinNodeScore;  // no match group
  const double node_cpu = static_cast<double>(cluster.CpuFree(node)) / kMaxSpecCpu;
  const double node_gpu = static_cast<double>(cluster.GpuFreeTotal(node)) / kMaxSpecGpu;
  const double pod_cpu = static_cast<double>(pod.cpu_milli) / kMaxSpecCpu;
  const double pod_gpu = static_cast<double>(pod.TotalGpuMilli()) / kMaxSpecGpu;
  double dot = 0;
  dot += node_cpu * pod_cpu;
  dot += node_gpu * pod_gpu;
  double score = dot / 2;  // / len(PodResourceVec): normalised to [0, 1]
  score = 1 - score;       // the larger the dot product, the lower the score
  return static_cast<int64_t>(static_cast<double>(kMaxNodeScore) * score);
}

// gpu_packing_score.go, getPackingScore.
int64_t GpuPackingScore(const ReplayCluster& cluster, int node, const TracePod& pod) {
  if (pod.num_gpu == 0) return kMinNodeScore;
  const int fully_free = cluster.FullyFreeGpus(node);
  // case 3: every GPU of the node is free.
  if (fully_free == cluster.GpuCount(node)) {
    return std::max<int64_t>(kMaxNodeScore / 3 - fully_free, fully_free);
  }
  std::span<const int32_t> free = cluster.GpuFree(node);
  std::vector<int> order(free.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return free[a] < free[b]; });
  int needed = pod.num_gpu;
  int fully_free_to_use = 0;
  std::vector<int> to_use;
  for (int index : order) {
    if (needed == 0) break;
    if (pod.gpu_milli <= free[index]) {
      --needed;
      to_use.push_back(index);
      if (free[index] == kMilliPerGpu) ++fully_free_to_use;
    }
  }
  if (needed != 0) return kMinNodeScore;  // filtered out before; never reached
  // case 2: fully free GPUs must be used on a partly used node.
  if (fully_free_to_use > 0) {
    return std::max<int64_t>(kMaxNodeScore / 2 - fully_free_to_use, kMaxNodeScore / 3);
  }
  // case 1: shared GPUs only, preferring the least free.
  int64_t free_ratio_on_used = 0;
  for (int index : to_use) free_ratio_on_used += free[index] * int64_t{100} / kMilliPerGpu;
  return std::max<int64_t>(kMaxNodeScore - free_ratio_on_used / 10, kMaxNodeScore / 2);
}

// gpu_clustering_score.go: tiers by the GPU "affinities" of the pods already on the node, then
// less free GPU within a tier.
int64_t GpuClusteringScore(const ReplayCluster& cluster, int node, const TracePod& pod) {
  const int affinity = GpuAffinityOf(pod);
  if (affinity == kNoAffinity) return kMinNodeScore;
  const auto& affinities = cluster.GpuAffinities(node);
  const bool has_same = std::any_of(affinities.begin(), affinities.end(), [&](const auto& entry) {
    return entry.first == affinity && entry.second > 0;
  });
  const int64_t fullness =
      kMaxNodeScore / 4 * (kMaxSpecGpuMilli - cluster.GpuFreeTotal(node)) / kMaxSpecGpuMilli;
  if (has_same) {
    return fullness + (affinities.size() == 1 ? kMaxNodeScore * 3 / 4 : kMaxNodeScore * 2 / 4);
  }
  return fullness + (affinities.empty() ? kMaxNodeScore / 4 : 0);
}

void FgdScorer::Bind(const ReplayCluster& cluster) {
  if (bound_ == &cluster && node_frag_.size() == static_cast<size_t>(cluster.node_count())) {
    return;
  }
  bound_ = &cluster;
  calculator_.emplace(target_, cluster.model_names());
  node_frag_.assign(cluster.node_count(), {});
}

double FgdScorer::NodeFrag(const ReplayCluster& cluster, int node) {
  Bind(cluster);
  CachedFrag& cached = node_frag_[node];
  if (cached.version_plus_one != cluster.Version(node) + 1) {
    cached.frag = calculator_->NodeFrag(cluster, node);
    cached.version_plus_one = cluster.Version(node) + 1;
  }
  return cached.frag;
}

FgdScorer::Evaluation FgdScorer::Evaluate(const ReplayCluster& cluster, int node,
                                          const TracePod& pod) {
  const double before = NodeFrag(cluster, node);
  const int64_t cpu_after = cluster.CpuFree(node) - pod.cpu_milli;
  const int model = cluster.ModelId(node);
  auto score_of = [&](std::span<const int32_t> free_after) {
    const double after = calculator_->NodeFrag(cpu_after, model, free_after);
    return static_cast<int64_t>(Sigmoid((before - after) / 1000) *
                                static_cast<double>(kMaxNodeScore));
  };
  Evaluation evaluation;
  std::span<const int32_t> free = cluster.GpuFree(node);
  if (IsSharing(pod)) {
    std::vector<int32_t> after(free.begin(), free.end());
    bool found = false;
    for (int i = 0; i < static_cast<int>(free.size()); ++i) {
      if (free[i] < pod.gpu_milli) continue;
      after[i] -= static_cast<int32_t>(pod.gpu_milli);
      const int64_t score = score_of(after);
      after[i] = free[i];
      if (!found || score > evaluation.score) {
        found = true;
        evaluation.score = score;
        evaluation.gpus = {i};
      }
    }
    return evaluation;  // score 0 and no GPU when nothing fits (the filters exclude that)
  }
  evaluation.score = score_of(FreeAfterPacking(free, pod));
  evaluation.gpus = SelectGpusExclusive(cluster, node, pod);
  return evaluation;
}

}  // namespace tessera::sim::replay
