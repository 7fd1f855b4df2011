#pragma once

// Placement policies for the trace replay: the FGD paper's baselines and FGD itself, ported from
// the authors' simulator (github.com/hkust-adsl/kubernetes-scheduler-simulator, 8f3d641,
// pkg/simulator/plugin/*_score.go and open_gpu_share.go), run as kube-scheduler runs them there:
//  - every node that passes the filters is scored (percentageOfNodesToScore: 100) by the one
//    enabled score plugin; scores are integers in [0, 100];
//  - ties go to the first top-scoring node in the scheduler's node list, random per seed
//    (ReplayCluster's TieBreak; upstream kube-scheduler's uniform draw is the other option);
//  - Open-Gpu-Share's Reserve then picks the GPUs inside that node ("gpusel").

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "sim/replay/cluster.h"
#include "sim/replay/metrics.h"
#include "sim/replay/placement_policy.h"
#include "sim/replay/trace.h"

namespace tessera::sim::replay {

// A placement policy of the trace replay: the one interface of both replays
// (PlacementPolicy), here placing trace pods into a ReplayCluster. One instance serves one
// replay (it may cache per-node values keyed by ReplayCluster::Version).
using Policy = PlacementPolicy<ReplayCluster, TracePod>;

// The shape of the FGD baselines: choose a node and GPUs without changing the cluster, then
// allocate them there (ReplayCluster::Allocate refuses a choice the filters do not allow).
class ChoosingPolicy : public Policy {
 public:
  // Where the pod should go, or nullopt when no node fits.
  virtual std::optional<Choice> Choose(const ReplayCluster& cluster, const TracePod& pod,
                                       std::mt19937_64& rng) = 0;
  Result<PlaceOutcome> Place(ReplayCluster& cluster, const TracePod& pod, const std::string& key,
                             std::mt19937_64& rng) final;
};

using PolicyFactory = std::function<std::unique_ptr<Policy>(const TargetWorkload&)>;
using PolicyFactories = std::map<std::string, PolicyFactory, std::less<>>;

// The built-in names: random, dotprod, gpuclustering, gpupacking, bestfit, fgd.
const std::vector<std::string>& BuiltinPolicyNames();

// Creates a policy by name.
// HOOK for policies defined outside this library (for example "tessera", the project's own
// scheduler): pass them in `extra`, which is consulted before the built-in names.
Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const TargetWorkload& target,
                                           const PolicyFactories* extra = nullptr);

// ---- Building blocks, public for tests and for policies defined elsewhere.

// A node's score; nodes tie when their scores are equal.
struct ScoredNode {
  int node = -1;
  int64_t score = 0;
};
// selectHost over nodes scored in node-list order: the first top-scoring node, or one drawn
// uniformly among them (no draw for a single one); see TieBreak.
std::optional<int> PickTopScore(std::span<const ScoredNode> scored, TieBreak tie_break,
                                std::mt19937_64& rng);

// GPU selection inside the chosen node (open_gpu_share.go, allocateGpuIdBasedOn*Fit, and
// simontype.AllocateExclusiveGpuId). Empty when the pod does not fit the node's GPUs; empty
// also for a CPU-only pod.
// "best": a sharing pod takes the GPU with the least free milli that fits (lowest index on
// ties); whole-GPU pods take the first fully free GPUs by index.
std::vector<int> SelectGpusBestFit(const ReplayCluster& cluster, int node, const TracePod& pod);
// "random": a sharing pod takes a GPU drawn uniformly among those that fit.
std::vector<int> SelectGpusRandom(const ReplayCluster& cluster, int node, const TracePod& pod,
                                  std::mt19937_64& rng);
// The first num_gpu fully free GPUs by index (pods of whole GPUs).
std::vector<int> SelectGpusExclusive(const ReplayCluster& cluster, int node, const TracePod& pod);

// Score plugins for a node that passed the filters; each is the named Go function, integer
// arithmetic and truncations included. MaxSpecCpu = 128000 milli, MaxSpecGpu = 8000 milli.
int64_t BestFitScore(const ReplayCluster& cluster, int node, const TracePod& pod);
int64_t DotProductScore(const ReplayCluster& cluster, int node, const TracePod& pod);
int64_t GpuPackingScore(const ReplayCluster& cluster, int node, const TracePod& pod);
int64_t GpuClusteringScore(const ReplayCluster& cluster, int node, const TracePod& pod);

// FGD (fgd_score.go, calculateGpuShareFragExtendScore): score = int(100 * sigmoid((F_before -
// F_after) / 1000)) with F = F_n(M). A sharing pod tries every GPU that fits and keeps the
// first with the highest score; other pods are packed onto the fullest GPUs that fit
// (NodeResource.Sub) for the score and get the first fully free GPUs (exclusive allocation).
class FgdScorer {
 public:
  explicit FgdScorer(TargetWorkload target) : target_(std::move(target)) {}
  struct Evaluation {
    int64_t score = 0;
    std::vector<int> gpus;
  };
  // The node must pass the filters for the pod.
  Evaluation Evaluate(const ReplayCluster& cluster, int node, const TracePod& pod);
  // F_n(M) of the node now, cached per node version.
  double NodeFrag(const ReplayCluster& cluster, int node);

 private:
  void Bind(const ReplayCluster& cluster);

  TargetWorkload target_;
  const ReplayCluster* bound_ = nullptr;
  std::optional<FragCalculator> calculator_;
  struct CachedFrag {
    uint64_t version_plus_one = 0;
    double frag = 0;
  };
  std::vector<CachedFrag> node_frag_;
};

}  // namespace tessera::sim::replay
