#include "core/sched/fragmentation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>

namespace tessera::sched {
namespace {

NodeCapacity Node(std::vector<int32_t> free, std::optional<int64_t> cpu = std::nullopt,
                  std::string type = "V100") {
  NodeCapacity c;
  c.gpu_free_mem = free;
  c.gpu_total_mem.assign(free.size(), 1000);
  c.gpu_free_cores.assign(free.size(), 100);
  c.gpu_usable.assign(free.size(), true);
  c.gpu_type = std::move(type);
  c.cpu_free_milli = cpu;
  return c;
}

DemandShape Shape(int gpus, int mem, int64_t cpu = 0, std::string type = "") {
  DemandShape s;
  s.gpus = gpus;
  s.gpu_mem_mib = mem;
  s.cpu_milli = cpu;
  s.gpu_type = std::move(type);
  return s;
}

TEST(NodeFragmentationTest, GpusTooSmallForAFittingShapeAreFragments) {
  // A 500-milli shape fits (GPU 0); GPU 1's 300 free cannot hold it.
  EXPECT_DOUBLE_EQ(NodeFragmentation(Node({800, 300}), {{Shape(1, 500), 1.0}}), 0.3);
}

TEST(NodeFragmentationTest, AShapeThatDoesNotFitMakesAllFreeCapacityFragment) {
  EXPECT_DOUBLE_EQ(NodeFragmentation(Node({800, 300}), {{Shape(1, 900), 1.0}}), 1.1);
  // Two whole GPUs: only one is fully free.
  EXPECT_DOUBLE_EQ(NodeFragmentation(Node({1000, 300}), {{Shape(2, 1000), 1.0}}), 1.3);
  // The host lacks CPU for the shape.
  EXPECT_DOUBLE_EQ(NodeFragmentation(Node({1000}, 100), {{Shape(1, 100, 200), 1.0}}), 1.0);
  // The shape asks for another model.
  EXPECT_DOUBLE_EQ(NodeFragmentation(Node({1000}), {{Shape(1, 100, 0, "T4,A10"), 1.0}}), 1.0);
  EXPECT_DOUBLE_EQ(NodeFragmentation(Node({1000}), {{Shape(1, 100, 0, "T4,V100"), 1.0}}), 0.0);
}

TEST(NodeFragmentationTest, CpuOnlyShapesCountAllFreeGpuAndWeightsAdd) {
  std::vector<WeightedShape> mix = {{Shape(0, 0, 1000), 0.25}, {Shape(1, 500), 0.75}};
  EXPECT_DOUBLE_EQ(NodeFragmentation(Node({800, 300}), mix), 0.25 * 1.1 + 0.75 * 0.3);
}

TEST(NodeFragmentationTest, UnusableGpusAreLeftOut) {
  NodeCapacity n = Node({800, 300});
  n.gpu_usable[1] = false;
  EXPECT_DOUBLE_EQ(NodeFragmentation(n, {{Shape(1, 500), 1.0}}), 0.0);
}

TEST(DemandMixTest, TargetKeepsTheMostFrequentShapesAndRenormalises) {
  DemandMix mix(1.0, 0.9);
  for (int i = 0; i < 6; ++i) mix.Observe(Shape(1, 500));
  for (int i = 0; i < 3; ++i) mix.Observe(Shape(1, 1000));
  mix.Observe(Shape(2, 1000));
  const auto& target = mix.Target();
  ASSERT_EQ(target.size(), 2U);  // 6 + 3 of 10 reach 90%
  EXPECT_EQ(target[0].shape, Shape(1, 500));
  EXPECT_DOUBLE_EQ(target[0].weight, 6.0 / 9.0);
  EXPECT_DOUBLE_EQ(target[1].weight, 3.0 / 9.0);
}

TEST(DemandMixTest, DecayFollowsTheRecentWorkload) {
  DemandMix mix(0.5, 1.0);
  for (int i = 0; i < 10; ++i) mix.Observe(Shape(1, 500));
  for (int i = 0; i < 10; ++i) mix.Observe(Shape(1, 100));
  const auto& target = mix.Target();
  ASSERT_EQ(target.size(), 2U);
  EXPECT_EQ(target[0].shape, Shape(1, 100));
  EXPECT_GT(target[0].weight, 0.99);
}

// ---- The fast paths must give the same doubles, bit for bit, as the formula written plainly:
// placements compare these values, so a last-bit difference could change a decision.

bool ReferenceTypeMatches(const std::string& node_type, const std::string& wanted) {
  if (wanted.empty()) return true;
  size_t begin = 0;
  while (begin <= wanted.size()) {
    size_t end = wanted.find(',', begin);
    if (end == std::string::npos) end = wanted.size();
    if (end > begin && node_type.find(wanted.substr(begin, end - begin)) != std::string::npos) {
      return true;
    }
    begin = end + 1;
  }
  return false;
}

// One pass over the GPUs per shape, as the measure is defined.
double ReferenceFragmentation(const NodeCapacity& node, const std::vector<WeightedShape>& target) {
  const size_t n = node.gpu_free_mem.size();
  double total_free = 0;
  std::vector<double> free_fraction(n, 0);
  for (size_t g = 0; g < n; ++g) {
    if (!node.gpu_usable[g] || node.gpu_total_mem[g] <= 0) continue;
    free_fraction[g] = static_cast<double>(node.gpu_free_mem[g]) / node.gpu_total_mem[g];
    total_free += free_fraction[g];
  }
  if (total_free <= 0) return 0;
  double fragmented = 0;
  for (const auto& [shape, p] : target) {
    bool fits = shape.gpus > 0 && ReferenceTypeMatches(node.gpu_type, shape.gpu_type) &&
                (!node.cpu_free_milli || *node.cpu_free_milli >= shape.cpu_milli);
    double unusable = 0;
    int holders = 0;
    if (fits) {
      for (size_t g = 0; g < n; ++g) {
        if (!node.gpu_usable[g]) continue;
        if (node.gpu_free_mem[g] >= shape.gpu_mem_mib &&
            node.gpu_free_cores[g] >= shape.gpu_cores) {
          ++holders;
        } else {
          unusable += free_fraction[g];
        }
      }
      fits = holders >= shape.gpus;
    }
    fragmented += p * (fits ? unusable : total_free);
  }
  return fragmented;
}

TEST(NodeFragmentationTest, PreparedTargetGivesTheFormulasDoublesBitForBit) {
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const std::vector<std::string> node_types = {"", "A10", "V100M16", "T4", "G2"};
  const std::vector<std::string> shape_types = {"", "", "", "A10", "T4,V100", "V100", "P100,G"};
  int compared_nonzero = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    NodeCapacity node;
    const int gpus = pick(21);  // past the 16 GPUs kept on the stack
    for (int g = 0; g < gpus; ++g) {
      const int total = std::vector<int>{0, 1000, 1000, 1000, 24576}[pick(5)];
      int free = total == 0 ? pick(3) * 100 : pick(3) == 0 ? total : pick(total + 1);
      if (pick(4) == 0) free = (free / 100) * 100;
      node.gpu_total_mem.push_back(total);
      node.gpu_free_mem.push_back(free);
      node.gpu_free_cores.push_back(std::vector<int>{0, 30, 100, 100}[pick(4)]);
      node.gpu_usable.push_back(pick(8) != 0);
    }
    node.gpu_type = node_types[pick(node_types.size())];
    if (pick(5) != 0) node.cpu_free_milli = pick(64) * 1000;
    std::vector<WeightedShape> target;
    const int shapes = iteration % 50 == 0 ? 100 : pick(40);  // sometimes past 64 demands
    for (int s = 0; s < shapes; ++s) {
      DemandShape shape;
      shape.gpus = pick(5);
      shape.gpu_mem_mib =
          iteration % 50 == 0 ? s * 13 : std::vector<int>{0, 100, 250, 500, 1000, 1200}[pick(6)];
      shape.gpu_cores = std::vector<int>{0, 0, 50}[pick(3)];
      shape.cpu_milli = pick(64) * 1000;
      shape.gpu_type = shape_types[pick(shape_types.size())];
      target.push_back(WeightedShape{shape, static_cast<double>(1 + pick(1000)) / 997.0});
    }
    const double expected = ReferenceFragmentation(node, target);
    if (expected != 0) ++compared_nonzero;
    EXPECT_EQ(NodeFragmentation(node, PreparedTarget(target)), expected)
        << "iteration " << iteration;
    EXPECT_EQ(NodeFragmentation(node, target), expected) << "iteration " << iteration;
    // The workspace, asked in any order, Before between takes (one per GPU, usable or not).
    const PreparedTarget prepared(target);
    NodeFragmentationWorkspace workspace;
    workspace.Reset(node, prepared);
    EXPECT_EQ(workspace.Before(), expected) << "iteration " << iteration;
    for (int g = 0; g < gpus; ++g) {
      const GpuTake take{g, pick(1500), pick(120)};
      const int64_t cpu = static_cast<int64_t>(pick(4)) * 1000;
      EXPECT_EQ(workspace.After(take, cpu), NodeFragmentationAfter(node, prepared, {&take, 1}, cpu))
          << "iteration " << iteration << ", GPU " << g;
      if (g % 3 == 0) {
        EXPECT_EQ(workspace.Before(), expected) << "iteration " << iteration;
      }
    }
    // The same node after a placement, applied on the fly, against a copy with it applied
    // (what the ranking did before): bit-identical, takes clipped at 0 and repeated GPUs too.
    if (gpus > 0) {
      std::vector<GpuTake> takes;
      NodeCapacity after = node;
      const int count = 1 + pick(3);
      for (int t = 0; t < count; ++t) {
        const GpuTake take{pick(gpus), pick(1500), pick(120)};
        takes.push_back(take);
        after.gpu_free_mem[take.gpu] = std::max(0, after.gpu_free_mem[take.gpu] - take.mem_mib);
        after.gpu_free_cores[take.gpu] = std::max(0, after.gpu_free_cores[take.gpu] - take.cores);
      }
      const int64_t cpu = static_cast<int64_t>(pick(4)) * 1000;
      if (after.cpu_free_milli) *after.cpu_free_milli -= cpu;
      EXPECT_EQ(NodeFragmentationAfter(node, PreparedTarget(target), takes, cpu),
                ReferenceFragmentation(after, target))
          << "iteration " << iteration;
    }
  }
  EXPECT_GT(compared_nonzero, 1000);
}

// Past 64 usable GPUs the workspace gives the plain function's answer too (its holder bits run
// out there).
TEST(NodeFragmentationTest, TheWorkspaceAnswersAlikeOnNodesWithManyGpus) {
  NodeCapacity node;
  for (int g = 0; g < 70; ++g) {
    node.gpu_total_mem.push_back(1000);
    node.gpu_free_mem.push_back((g * 37) % 1001);
    node.gpu_free_cores.push_back(100);
    node.gpu_usable.push_back(g % 9 != 0);
  }
  std::vector<WeightedShape> target;
  for (int m : {100, 300, 700}) {
    DemandShape shape;
    shape.gpus = 1;
    shape.gpu_mem_mib = m;
    target.push_back(WeightedShape{shape, 1.0 / 3});
  }
  const PreparedTarget prepared(target);
  NodeFragmentationWorkspace workspace;
  workspace.Reset(node, prepared);
  EXPECT_EQ(workspace.Before(), NodeFragmentation(node, prepared));
  for (int g = 0; g < 70; g += 7) {
    const GpuTake take{g, 250, 10};
    EXPECT_EQ(workspace.After(take, 0), NodeFragmentationAfter(node, prepared, {&take, 1}, 0));
  }
}

// The mix as first written: every Target() ranks all shapes again with a stable sort.
class ReferenceMix {
 public:
  ReferenceMix(double decay, double coverage, size_t max_shapes)
      : decay_(decay), coverage_(coverage), max_shapes_(max_shapes) {}
  void Observe(const DemandShape& shape, double weight) {
    if (decay_ < 1.0) {
      scale_ *= decay_;
      if (scale_ < 1e-100) {
        for (auto& [s, c] : counts_) c *= scale_;
        scale_ = 1.0;
      }
    }
    counts_[shape] += weight / scale_;
  }
  std::vector<WeightedShape> Target() const {
    std::vector<WeightedShape> target;
    std::vector<std::pair<double, const DemandShape*>> ranked;
    double total = 0;
    for (const auto& [shape, count] : counts_) {
      ranked.emplace_back(count, &shape);
      total += count;
    }
    if (total <= 0) return target;
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    double covered = 0;
    for (const auto& [count, shape] : ranked) {
      if (covered >= coverage_ * total || target.size() >= max_shapes_) break;
      target.push_back(WeightedShape{*shape, count});
      covered += count;
    }
    for (auto& w : target) w.weight /= covered;
    return target;
  }

 private:
  double decay_, coverage_;
  size_t max_shapes_;
  double scale_ = 1.0;
  std::map<DemandShape, double> counts_;
};

void ExpectSameTarget(const std::vector<WeightedShape>& got, const std::vector<WeightedShape>& want,
                      int step) {
  ASSERT_EQ(got.size(), want.size()) << "step " << step;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].shape, want[i].shape) << "step " << step << ", rank " << i;
    EXPECT_EQ(got[i].weight, want[i].weight) << "step " << step << ", rank " << i;
  }
}

TEST(DemandMixTest, IncrementalRankingMatchesARankingFromScratch) {
  // Without decay (many equal counts: ties go by shape order), with the replay's decay, and with
  // a decay that renormalises every few hundred observations.
  for (double decay : {1.0, 0.9995, 0.5}) {
    std::mt19937 rng(11);
    DemandMix mix(decay, 0.95, 12);
    ReferenceMix reference(decay, 0.95, 12);
    for (int step = 0; step < 3000; ++step) {
      DemandShape shape = Shape(1 + static_cast<int>(rng() % 3), 100 * static_cast<int>(rng() % 9),
                                1000 * static_cast<int64_t>(rng() % 4));
      const double weight = rng() % 10 == 0 ? static_cast<double>(1 + rng() % 7) : 1.0;
      mix.Observe(shape, weight);
      reference.Observe(shape, weight);
      if (step % 7 == 0 || step > 2900) ExpectSameTarget(mix.Target(), reference.Target(), step);
      if (step == 1500) {
        DemandMix copy = mix;  // a copy ranks on its own
        ExpectSameTarget(copy.Target(), reference.Target(), step);
        copy.Observe(shape, 1.0);
        ExpectSameTarget(mix.Target(), reference.Target(), step);
      }
    }
  }
}

}  // namespace
}  // namespace tessera::sched
