#include "sim/replay/upper_bound.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>

#include "sim/replay/cluster.h"
#include "sim/replay/glpk_problem.h"
#include "sim/replay/workload.h"

namespace tessera::sim::replay {
namespace {

struct NodeClass {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int gpus = 0;
  std::string model;
  int count = 0;
};

struct PodType {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int num_gpu = 0;
  int64_t gpu_milli = 0;  // per GPU
  std::vector<std::string> gpu_spec;
  int count = 0;
};

// Also fills class_of_node (-1 for a node without GPUs).
std::vector<NodeClass> ClassesOf(const std::vector<TraceNode>& nodes,
                                 std::vector<int>* class_of_node) {
  std::map<std::tuple<int64_t, int64_t, int, std::string>, int> index;
  std::vector<NodeClass> classes;
  for (const TraceNode& node : nodes) {
    if (node.gpus <= 0) {  // holds no GPU pod
      class_of_node->push_back(-1);
      continue;
    }
    auto key = std::make_tuple(node.cpu_milli, node.memory_mib, node.gpus, node.model);
    auto [it, inserted] = index.emplace(key, static_cast<int>(classes.size()));
    if (inserted) classes.push_back({node.cpu_milli, node.memory_mib, node.gpus, node.model, 0});
    ++classes[it->second].count;
    class_of_node->push_back(it->second);
  }
  return classes;
}

// Also fills type_of_pod (-1 for a CPU-only pod).
std::vector<PodType> TypesOf(std::span<const TracePod> pods, std::vector<int>* type_of_pod) {
  std::map<std::tuple<int64_t, int64_t, int, int64_t, std::vector<std::string>>, int> index;
  std::vector<PodType> types;
  for (const TracePod& pod : pods) {
    type_of_pod->push_back(-1);
    if (pod.num_gpu <= 0) continue;
    auto key =
        std::make_tuple(pod.cpu_milli, pod.memory_mib, pod.num_gpu, pod.gpu_milli, pod.gpu_spec);
    auto [it, inserted] = index.emplace(key, static_cast<int>(types.size()));
    if (inserted) {
      types.push_back({pod.cpu_milli, pod.memory_mib, pod.num_gpu, pod.gpu_milli, pod.gpu_spec, 0});
    }
    ++types[it->second].count;
    type_of_pod->back() = it->second;
  }
  return types;
}

bool OneFits(const PodType& pod, const NodeClass& node) {
  if (pod.cpu_milli > node.cpu_milli || pod.memory_mib > node.memory_mib) return false;
  if (pod.num_gpu > node.gpus) return false;
  return pod.gpu_spec.empty() ||
         std::find(pod.gpu_spec.begin(), pod.gpu_spec.end(), node.model) != pod.gpu_spec.end();
}

// The LP's x[t][k], by (type, class); what an offline packing tries to follow.
using LpShares = std::vector<std::vector<double>>;

// A feasible offline packing guided by the LP: first the pods the LP takes (per type, as many
// as its x[t][.] sums to), then the rest; within each group the largest requests first, each on
// the node where it leaves the least room (the fullest GPU that holds a sharing pod; the fewest
// whole free GPUs for the others; then the least free CPU), among the node classes the LP put
// its type on while their share lasts, else anywhere.
class OfflinePacker {
 public:
  OfflinePacker(const std::vector<TraceNode>& nodes, std::vector<int> class_of_node)
      : cluster_(nodes), class_of_node_(std::move(class_of_node)) {}

  double Pack(std::span<const TracePod> pods, const std::vector<int>& type_of_pod,
              LpShares shares) {
    shares_ = std::move(shares);
    std::vector<double> taken(shares_.size(), 0);
    for (size_t t = 0; t < shares_.size(); ++t) {
      for (double x : shares_[t]) taken[t] += x;
    }
    std::vector<size_t> order;
    for (size_t i = 0; i < pods.size(); ++i) {
      if (type_of_pod[i] >= 0) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (pods[a].TotalGpuMilli() != pods[b].TotalGpuMilli()) {
        return pods[a].TotalGpuMilli() > pods[b].TotalGpuMilli();
      }
      return pods[a].cpu_milli > pods[b].cpu_milli;
    });
    std::vector<size_t> rest;
    for (size_t i : order) {
      const int t = type_of_pod[i];
      if (taken[t] >= 1 - 1e-6) {
        taken[t] -= 1;
        Place(pods[i], t);
      } else {
        rest.push_back(i);
      }
    }
    for (size_t i : rest) Place(pods[i], -1);
    return static_cast<double>(cluster_.allocated_gpu_milli());
  }

 private:
  struct Spot {
    int node = -1;
    int gpu = -1;  // for a sharing pod
    int64_t room = 0;
    int64_t cpu = 0;
  };

  // The best spot among nodes `eligible` accepts.
  template <class Eligible>
  Spot BestSpot(const TracePod& pod, const ModelMask& allowed, const Eligible& eligible) const {
    Spot best;
    auto consider = [&](int node, int gpu, int64_t room, int64_t cpu) {
      if (best.node < 0 || room < best.room || (room == best.room && cpu < best.cpu)) {
        best = {node, gpu, room, cpu};
      }
    };
    for (int n = 0; n < cluster_.node_count(); ++n) {
      if (!eligible(n) || !cluster_.Fits(n, pod, allowed)) continue;
      const int64_t cpu = cluster_.CpuFree(n);
      if (pod.gpu_milli < kMilliPerGpu) {
        const auto free = cluster_.GpuFree(n);
        for (int g = 0; g < static_cast<int>(free.size()); ++g) {
          if (free[g] >= pod.gpu_milli) consider(n, g, free[g] - pod.gpu_milli, cpu);
        }
      } else {
        consider(n, -1, cluster_.FullyFreeGpus(n) - pod.num_gpu, cpu);
      }
    }
    return best;
  }

  void Place(const TracePod& pod, int type) {
    const ModelMask allowed = cluster_.AllowedModels(pod);
    Spot spot;
    if (type >= 0) {
      spot = BestSpot(pod, allowed, [&](int n) {
        const int k = class_of_node_[n];
        return k >= 0 && shares_[type][k] >= 1 - 1e-6;
      });
    }
    if (spot.node < 0) spot = BestSpot(pod, allowed, [](int) { return true; });
    if (spot.node < 0) return;
    std::vector<int> gpus;
    if (spot.gpu >= 0) {
      gpus.push_back(spot.gpu);
    } else {
      const auto free = cluster_.GpuFree(spot.node);
      for (int g = 0;
           g < static_cast<int>(free.size()) && static_cast<int>(gpus.size()) < pod.num_gpu; ++g) {
        if (free[g] == kMilliPerGpu) gpus.push_back(g);
      }
    }
    if (!cluster_.Allocate(spot.node, pod, gpus).ok()) return;  // the filters said it fits
    const int k = class_of_node_[spot.node];
    if (type >= 0 && k >= 0) shares_[type][k] -= 1;
  }

  ReplayCluster cluster_;
  std::vector<int> class_of_node_;
  LpShares shares_;
};

// The ways one GPU can be filled: every multiset of the per-GPU requests `sizes` (descending)
// that sums to at most 1000 milli and leaves room for none of them. Any GPU's pods are a
// subset of one of these, so these patterns are enough. Empty when there would be more than
// `limit` (the bound then goes without them).
std::vector<std::vector<int>> MaximalGpuPatterns(const std::vector<int64_t>& sizes, size_t limit) {
  std::vector<std::vector<int>> patterns;
  if (sizes.empty()) return patterns;
  const int64_t smallest = sizes.back();
  std::vector<int> counts(sizes.size(), 0);
  bool overflow = false;
  auto extend = [&](auto& self, size_t i, int64_t room) -> void {
    if (overflow) return;
    if (i == sizes.size()) {
      if (room >= smallest) return;  // another request would fit: not maximal
      if (patterns.size() == limit) {
        overflow = true;
        return;
      }
      patterns.push_back(counts);
      return;
    }
    for (int k = static_cast<int>(room / sizes[i]); k >= 0; --k) {
      counts[i] = k;
      self(self, i + 1, room - k * sizes[i]);
    }
    counts[i] = 0;
  };
  extend(extend, 0, kMilliPerGpu);
  if (overflow) patterns.clear();
  return patterns;
}

constexpr size_t kPatternLimit = 20000;

}  // namespace

Result<AllocationBound> AllocationUpperBound(const std::vector<TraceNode>& nodes,
                                             std::span<const TracePod> pods) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<int> class_of_node;
  std::vector<int> type_of_pod;
  const std::vector<NodeClass> classes = ClassesOf(nodes, &class_of_node);
  const std::vector<PodType> types = TypesOf(pods, &type_of_pod);
  int64_t capacity_milli = 0;
  for (const NodeClass& c : classes) capacity_milli += int64_t{c.count} * c.gpus * kMilliPerGpu;
  AllocationBound bound;
  bound.node_classes = static_cast<int>(classes.size());
  bound.pod_types = static_cast<int>(types.size());
  if (capacity_milli == 0 || types.empty()) return bound;

  const GlpkEnvironment environment;
  GlpkProblem lp(glp_create_prob(), &glp_delete_prob);
  glp_set_obj_dir(lp.get(), GLP_MAX);
  // The per-GPU requests, largest first, and the ways to fill one GPU with them.
  std::vector<int64_t> sizes;
  sizes.reserve(types.size());
  for (const PodType& p : types) sizes.push_back(p.gpu_milli);
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  const std::vector<std::vector<int>> patterns = MaximalGpuPatterns(sizes, kPatternLimit);
  bound.gpu_patterns = static_cast<int>(patterns.size());
  auto size_index = [&](int64_t milli) {
    return static_cast<int>(std::find(sizes.begin(), sizes.end(), milli) - sizes.begin());
  };

  // Rows: one per pod type (its count); per node class five, then (with patterns) one per
  // request size (its GPUs come from the class's patterns) and one for the GPUs patterns use.
  const int kRowsPerClass = 5 + (patterns.empty() ? 0 : static_cast<int>(sizes.size()) + 1);
  const int type_rows = static_cast<int>(types.size());
  glp_add_rows(lp.get(), type_rows + kRowsPerClass * static_cast<int>(classes.size()));
  for (int t = 0; t < type_rows; ++t) {
    glp_set_row_bnds(lp.get(), t + 1, GLP_UP, 0, types[t].count);
  }
  auto class_row = [&](int k, int which) { return type_rows + kRowsPerClass * k + which + 1; };
  for (int k = 0; k < static_cast<int>(classes.size()); ++k) {
    const NodeClass& c = classes[k];
    const double n = c.count;
    glp_set_row_bnds(lp.get(), class_row(k, 0), GLP_UP, 0, n * static_cast<double>(c.cpu_milli));
    glp_set_row_bnds(lp.get(), class_row(k, 1), GLP_UP, 0, n * static_cast<double>(c.memory_mib));
    glp_set_row_bnds(lp.get(), class_row(k, 2), GLP_UP, 0,
                     n * c.gpus * static_cast<double>(kMilliPerGpu));
    glp_set_row_bnds(lp.get(), class_row(k, 3), GLP_UP, 0, n * c.gpus);
    glp_set_row_bnds(lp.get(), class_row(k, 4), GLP_UP, 0, n);
    if (patterns.empty()) continue;
    for (size_t z = 0; z < sizes.size(); ++z) {
      glp_set_row_bnds(lp.get(), class_row(k, 5 + static_cast<int>(z)), GLP_UP, 0, 0);
    }
    glp_set_row_bnds(lp.get(), class_row(k, 5 + static_cast<int>(sizes.size())), GLP_UP, 0,
                     n * c.gpus);
  }

  // Columns: x[t][k] for every pair where one pod fits one node. The matrix goes in as
  // (row, column, value) triplets, 1-based with an unused slot 0 as GLPK expects.
  std::vector<int> rows{0};
  std::vector<int> cols{0};
  std::vector<double> values{0};
  int column = 0;
  std::vector<std::pair<int, int>> column_pair{{-1, -1}};  // (type, class) of each x column
  auto add = [&](int row, double value) {
    if (value == 0) return;
    rows.push_back(row);
    cols.push_back(column);
    values.push_back(value);
  };
  for (int t = 0; t < type_rows; ++t) {
    const PodType& p = types[t];
    const double milli = static_cast<double>(p.gpu_milli) * p.num_gpu;
    for (int k = 0; k < static_cast<int>(classes.size()); ++k) {
      const NodeClass& c = classes[k];
      if (!OneFits(p, c)) continue;
      ++column;
      column_pair.emplace_back(t, k);
      glp_add_cols(lp.get(), 1);
      glp_set_col_bnds(lp.get(), column, GLP_LO, 0, 0);
      glp_set_obj_coef(lp.get(), column, milli);
      add(t + 1, 1);
      add(class_row(k, 0), static_cast<double>(p.cpu_milli));
      add(class_row(k, 1), static_cast<double>(p.memory_mib));
      add(class_row(k, 2), milli);
      add(class_row(k, 3), 2 * p.gpu_milli > kMilliPerGpu ? p.num_gpu : 0);
      add(class_row(k, 4), 2 * p.num_gpu > c.gpus ? 1 : 0);
      if (!patterns.empty()) add(class_row(k, 5 + size_index(p.gpu_milli)), p.num_gpu);
    }
  }
  const int x_columns = column;
  if (x_columns == 0) return bound;
  // y[p][k]: GPUs of class k filled as pattern p.
  for (int k = 0; k < static_cast<int>(classes.size()) && !patterns.empty(); ++k) {
    for (const std::vector<int>& pattern : patterns) {
      ++column;
      glp_add_cols(lp.get(), 1);
      glp_set_col_bnds(lp.get(), column, GLP_LO, 0, 0);
      for (size_t z = 0; z < sizes.size(); ++z)
        add(class_row(k, 5 + static_cast<int>(z)), -pattern[z]);
      add(class_row(k, 5 + static_cast<int>(sizes.size())), 1);
    }
  }
  if (!SolveQuietly(lp.get(), rows, cols, values, /*scale=*/true)) {
    return Error{"upper bound: the LP solver found no optimum (glp_simplex status " +
                 std::to_string(glp_get_status(lp.get())) + ")"};
  }
  bound.gpu_milli = glp_get_obj_val(lp.get());
  bound.gpu_alloc_pct = 100.0 * bound.gpu_milli / static_cast<double>(capacity_milli);
  LpShares shares(types.size(), std::vector<double>(classes.size(), 0));
  for (int c = 1; c <= x_columns; ++c) {
    shares[column_pair[c].first][column_pair[c].second] = glp_get_col_prim(lp.get(), c);
  }
  // Two packings, following the LP and not; the better one is what an offline scheduler can
  // reach at least.
  OfflinePacker guided(nodes, class_of_node);
  OfflinePacker unguided(nodes, class_of_node);
  const double packed =
      std::max(guided.Pack(pods, type_of_pod, std::move(shares)),
               unguided.Pack(pods, type_of_pod,
                             LpShares(types.size(), std::vector<double>(classes.size(), 0))));
  bound.offline_packing_pct = 100.0 * packed / static_cast<double>(capacity_milli);
  bound.solve_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return bound;
}

Result<std::vector<AllocationBound>> UpperBoundPerSeed(const std::vector<TraceNode>& nodes,
                                                       const std::vector<TracePod>& pods,
                                                       const std::vector<uint64_t>& seeds,
                                                       double tune) {
  int64_t total_gpu_milli = 0;
  for (const TraceNode& node : nodes) total_gpu_milli += node.gpus * kMilliPerGpu;
  std::vector<AllocationBound> out;
  out.reserve(seeds.size());
  // One at a time: GLPK's environment is per thread only when it was built reentrant.
  for (uint64_t seed : seeds) {
    std::mt19937_64 rng(seed);  // the first draws of RunSeed's stream: the workload
    const std::vector<TracePod> replay = Inflate(pods, total_gpu_milli, tune, rng);
    auto bound = AllocationUpperBound(nodes, replay);
    if (!bound.ok()) return Error{"seed " + std::to_string(seed) + ": " + bound.error().message};
    out.push_back(bound.value());
  }
  return out;
}

}  // namespace tessera::sim::replay
