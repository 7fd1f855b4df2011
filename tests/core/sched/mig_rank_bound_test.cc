#include "core/sched/mig_rank_bound.h"

#include <gtest/gtest.h>
#include <limits>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/mig/catalog.h"
#include "core/sched/cycle_state.h"
#include "core/sched/node_evaluator.h"
#include "core/sched/node_ranking.h"
#include "support/builders.h"
#include "support/mig_fill.h"

namespace tessera::sched {
namespace {

using testing::A100Mig;
using testing::NodeWith;
using testing::PodBuilder;

// A cluster of MIG nodes unlike one another (models, GPU counts, health, random instances), a MIG
// demand mix and, on some seeds, a prior that leaves profiles at zero weight (so that stranded
// slices can be given back).
class MigRankBoundProperty : public ::testing::Test {
 protected:
  void Build(uint64_t seed) {
    state_.emplace(config::SchedulerConfig{});
    std::mt19937 rng(static_cast<uint32_t>(seed));
    auto catalog = mig::GpuModelCatalog::Builtin();
    ASSERT_TRUE(catalog.ok());
    std::vector<const mig::GpuModelSpec*> specs;
    for (const auto& spec : catalog->models()) {
      if (spec.complete) specs.push_back(&spec);
    }
    for (int n = 0; n < 30; ++n) {
      const std::string name = "node-" + std::to_string(n);
      std::vector<model::GpuDevice> devices;
      const int gpus = 1 + static_cast<int>(rng() % 8);
      // Mostly one model per node, sometimes two.
      const auto* first = specs[rng() % specs.size()];
      const auto* second = rng() % 4 == 0 ? specs[rng() % specs.size()] : first;
      for (int g = 0; g < gpus; ++g) {
        devices.push_back(testing::MigDeviceOf(g % 2 == 0 ? *first : *second,
                                               name + "-" + std::to_string(g),
                                               static_cast<uint32_t>(g)));
        devices.back().healthy = rng() % 10 != 0;
      }
      state_->UpsertNode(NodeWith(name, devices));
      testing::FillMigRandomly(&*state_, name, &rng);
    }
    mix_.emplace(1.0);
    for (int k = 0; k < 4; ++k) {
      const bool percent = rng() % 4 == 0;
      mix_->Observe(MigDemandKey{percent ? 0 : 1000 * static_cast<int32_t>(1 + rng() % 40),
                                 percent ? 10 * static_cast<int32_t>(1 + rng() % 9) : 0, 0},
                    1.0 + static_cast<double>(rng() % 5));
    }
    defaults_ = PolicyDefaults{};
    if (seed % 3 == 0) defaults_.mig_prior = ParseMigPrior("1g=3,7g=1", 8).value();
    if (seed % 5 == 0) defaults_.mig_allow_larger_profiles = true;
  }

  static model::Pod RandomPod(std::mt19937& rng, const std::string& key) {
    PodBuilder b(key);
    b.MigMode();
    const int containers = 1 + static_cast<int>(rng() % 4 == 0);
    for (int c = 0; c < containers; ++c) {
      const int count = 1 + static_cast<int>(rng() % 5 == 0 ? 1 + rng() % 2 : 0);
      const int mem = std::vector<int>{3000, 4900, 9000, 19000, 39000, 70000}[rng() % 6];
      b.Container(count, mem, rng() % 3 == 0 ? 30 : -1);
    }
    return b.Build();
  }

  PolicyDefaults defaults_;
  std::optional<state::ClusterState> state_;
  std::optional<MigDemandMix> mix_;
  DemandMix no_shared_mix_;
};

// The floor is a floor: no node the pod fits ranks in a lower bucket, and where the bucket is the
// floor, no node scores above the ceiling; and both are reached often, or they would skip little
// (a pool of alike nodes ties on both: only the ceiling's exactness skips them).
TEST_F(MigRankBoundProperty, NoNodeThatFitsRanksBeforeItsBound) {
  int fitted = 0;
  int attained = 0;
  int tight = 0;  // the score ceiling reached too
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Build(seed);
    std::mt19937 rng(static_cast<uint32_t>(seed * 31));
    for (int p = 0; p < 8; ++p) {
      const model::Pod pod = RandomPod(rng, "ns/probe-" + std::to_string(p));
      const ParsedPod parsed = ParsePod(pod, config::NvidiaConfig{}, defaults_);
      ASSERT_TRUE(parsed.request.ok()) << parsed.request.error().message;
      const CycleState cycle(parsed.request.value(), parsed.prefs->value(), parsed.cpu_milli,
                             no_shared_mix_, *mix_, defaults_);
      int instances = 0;
      for (const ContainerRequest& k : parsed.request->slots) instances += k.nums;
      // More instances than the bound spreads over GPUs: not bounded.
      ASSERT_EQ(cycle.mig_rank_bound().enabled(), instances <= MigRankBound::kMaxInstances);
      if (!cycle.mig_rank_bound().enabled()) continue;
      NodeEvaluator evaluator(cycle);
      for (const state::NodeState* node : state_->node_list()) {
        NodeRank rank;
        const NodeFit fit = evaluator.FitAndRank(*node, &rank);
        // Asked first with nothing to beat, the bound stops at its quick floor (the least
        // over every spread, not only the least-memory ones): a floor too, and infinite only
        // where nothing fits (RulesOut).
        const std::optional<MigRankBound::NodeBound> quick =
            cycle.mig_rank_bound().Bound(*node, -std::numeric_limits<double>::infinity());
        const std::optional<MigRankBound::NodeBound> bound = cycle.mig_rank_bound().Bound(*node);
        ASSERT_TRUE(bound.has_value() && quick.has_value()) << node->name;
        EXPECT_LE(quick->lowest_bucket, bound->lowest_bucket) << node->name;
        EXPECT_EQ(cycle.mig_rank_bound().RulesOut(*node),
                  bound->lowest_bucket == std::numeric_limits<double>::infinity())
            << node->name;
        if (!fit.fits) continue;
        EXPECT_FALSE(cycle.mig_rank_bound().RulesOut(*node)) << node->name;
        ++fitted;
        const std::string where =
            "seed " + std::to_string(seed) + ", pod " + std::to_string(p) + ", " + node->name;
        EXPECT_GE(rank.bucket, bound->lowest_bucket) << where;
        if (rank.bucket != bound->lowest_bucket) continue;
        ++attained;
        EXPECT_GE(bound->highest_score, rank.score) << where;
        tight += bound->highest_score == rank.score ? 1 : 0;
      }
    }
  }
  EXPECT_GT(fitted, 2000);
  // Measured: about 86% reach the floor, and two thirds of those the score's ceiling too.
  EXPECT_GT(attained, fitted / 2) << "the floor is seldom reached: it would skip little";
  EXPECT_GT(tight, attained / 2) << "the score's ceiling is seldom reached: ties are not skipped";
}

class MigRankBoundTest : public ::testing::Test {
 protected:
  const CycleState& Cycle(const model::Pod& pod) {
    parsed_ = ParsePod(pod, config::NvidiaConfig{}, defaults_);
    cycle_.emplace(parsed_.request.value(), parsed_.prefs->value(), parsed_.cpu_milli,
                   no_shared_mix_, mix_, defaults_);
    return *cycle_;
  }
  NodeRank RankOf(const CycleState& cycle, const std::string& node) {
    NodeEvaluator evaluator(cycle);
    NodeRank rank;
    EXPECT_TRUE(evaluator.FitAndRank(*state_.node(node), &rank).fits);
    return rank;
  }

  state::ClusterState state_{config::SchedulerConfig{}};
  PolicyDefaults defaults_;
  DemandMix no_shared_mix_;
  MigDemandMix mix_{1.0};
  ParsedPod parsed_;
  std::optional<CycleState> cycle_;
};

// One 1g instance on an empty A100-40GB: the floor is the drop of the best placement of the
// least memory, exactly the plan's.
TEST_F(MigRankBoundTest, OnAnEmptyGpuTheFloorIsTheBestStepsDrop) {
  state_.UpsertNode(NodeWith("node-a", {A100Mig("GPU-a")}));
  mix_.Observe(MigDemandKey{4000, 0, 0}, 3);
  const CycleState& cycle = Cycle(PodBuilder("ns/p").MigMode().Container(1, 4000).Build());
  ASSERT_TRUE(cycle.mig_rank_bound().enabled());
  const auto bound = cycle.mig_rank_bound().Bound(*state_.node("node-a"));
  ASSERT_TRUE(bound.has_value());
  EXPECT_GT(bound->lowest_bucket, 0);
  const NodeRank rank = RankOf(cycle, "node-a");
  EXPECT_EQ(bound->lowest_bucket, rank.bucket);
  // One instance of one size: the least memory is the plan's, and so is the score.
  EXPECT_EQ(bound->highest_score, rank.score);
}

TEST_F(MigRankBoundTest, ANodeWithoutRoomIsOutrankedByAnyFit) {
  state_.UpsertNode(NodeWith("node-a", {A100Mig("GPU-a")}));
  state_.UpsertNode(NodeWith("node-b", {A100Mig("GPU-b")}));
  mix_.Observe(MigDemandKey{4000, 0, 0}, 3);
  // A 40 GB instance fills node-b's GPU.
  state::PodReservation full{"ns/full", "u", "node-b", 0, {{}}, {}};
  const mig::GpuMigModel& model = state_.node("node-b")->mig_models[0];
  const int p = model.ProfileIndex("7g.40gb");
  ASSERT_GE(p, 0);
  full.devices[0].push_back(codec::ContainerDevice{
      "GPU-b", "NVIDIA", model.profiles()[p].memory_mib, model.profiles()[p].core});
  full.mig.push_back(codec::MigAllocation{0, 0, "GPU-b", "7g.40gb",
                                          model.profiles()[p].placements.front(), std::nullopt});
  state_.AddPod(full);
  const CycleState& cycle = Cycle(PodBuilder("ns/p").MigMode().Container(1, 4000).Build());
  EXPECT_EQ(cycle.mig_rank_bound().Bound(*state_.node("node-b"))->lowest_bucket,
            std::numeric_limits<double>::infinity());
  const NodeRank best = RankOf(cycle, "node-a");
  EXPECT_TRUE(Outranked(cycle, *state_.node("node-b"), best, *state_.node("node-a")));
  // node-a itself is not outranked by its own rank (equal floor, equal score, same name).
  EXPECT_FALSE(Outranked(cycle, *state_.node("node-a"), best, *state_.node("node-b")));
}

TEST_F(MigRankBoundTest, OnlyTesserasRankingOfMigNodesIsBounded) {
  state_.UpsertNode(NodeWith("node-a", {A100Mig("GPU-a")}));
  mix_.Observe(MigDemandKey{4000, 0, 0}, 3);
  // A named HAMi policy ranks by HAMi's score: no bound.
  EXPECT_FALSE(Cycle(PodBuilder("ns/p")
                         .MigMode()
                         .Annotation("hami.io/node-scheduler-policy", "binpack")
                         .Container(1, 4000)
                         .Build())
                   .mig_rank_bound()
                   .enabled());
  // A pod that names GPUs: the plan reads the GPUs' objects, no bound.
  EXPECT_FALSE(Cycle(PodBuilder("ns/p")
                         .MigMode()
                         .Annotation("nvidia.com/use-gputype", "A100")
                         .Container(1, 4000)
                         .Build())
                   .mig_rank_bound()
                   .enabled());
  // A node with a GPU not in MIG mode is planned by HAMi's pass there: no answer.
  state_.UpsertNode(NodeWith("node-m", {A100Mig("GPU-m"), testing::SharingGpu("GPU-s")}));
  const CycleState& cycle = Cycle(PodBuilder("ns/p").Container(1, 4000).Build());
  EXPECT_FALSE(cycle.mig_rank_bound().Bound(*state_.node("node-m")).has_value());
}

}  // namespace
}  // namespace tessera::sched
