#include "core/sched/explain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/sched/scheduler.h"
#include "support/builders.h"

namespace tessera::sched {
namespace {

using testing::A100Mig;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::NodeWith;
using testing::PodBuilder;
using testing::SharingGpu;

class ExplainTest : public ::testing::Test {
 protected:
  ExplainTest() : state_(config::SchedulerConfig{}), scheduler_(state_, PolicyDefaults{}) {}

  void AddNode(const std::string& name, const std::vector<model::GpuDevice>& gpus) {
    state_.UpsertNode(NodeWith(name, gpus));
  }
  void Run(const model::Pod& pod) {
    Decision d = scheduler_.Schedule(pod, nullptr, 0);
    ASSERT_TRUE(d.scheduled()) << pod.Key() << ": " << d.message;
  }
  Explanation Explain(const model::Pod& pod, ExplainLimits limits = {}) {
    return ExplainPod(state_, pod, PolicyDefaults{}, limits);
  }
  static const NodeExplanation& NodeOf(const Explanation& e, const std::string& name) {
    for (const auto& n : e.nodes) {
      if (n.name == name) return n;
    }
    ADD_FAILURE() << "no node " << name;
    return e.nodes.front();
  }

  state::ClusterState state_;
  Scheduler scheduler_;
};

TEST_F(ExplainTest, APodThatFitsListsEveryNodeThatCouldTakeIt) {
  AddNode("a", {SharingGpu("GPU-a", 8000)});
  AddNode("b", {SharingGpu("GPU-b", 8000)});
  Run(PodBuilder("default/big")
          .Annotation("nvidia.com/use-gpuuuid", "GPU-b")
          .Container(1, 7000, 10)
          .Build());
  Explanation e = Explain(PodBuilder("default/p").Container(1, 2000, 10).Build());
  EXPECT_TRUE(e.fits);
  EXPECT_THAT(e.fitting_nodes, ElementsAre("a"));
  EXPECT_EQ(NodeOf(e, "b").reason, "1/1 CardInsufficientMemory");
  EXPECT_EQ(NodeOf(e, "b").gpus[0].reason, "CardInsufficientMemory");
  EXPECT_THAT(NodeOf(e, "b").gpus[0].pods, ElementsAre("default/big"));
  EXPECT_FALSE(e.remedy);
}

TEST_F(ExplainTest, TheSmallestSetOfPodsToRemoveAndAmongThoseTheLeastMemory) {
  AddNode("n1", {SharingGpu("GPU-1", 8000)});
  AddNode("n2", {SharingGpu("GPU-2", 8000)});
  // n1 runs three pods of 2000 MiB (2000 free), n2 one of 5000 and one of 2000 (1000 free). A
  // 5000 MiB pod needs two of n1's pods gone; on n2 the 2000 one is not enough (3000 free), the
  // 5000 one alone is.
  for (int i = 0; i < 3; ++i) {
    Run(PodBuilder("default/n1-" + std::to_string(i))
            .Annotation("nvidia.com/use-gpuuuid", "GPU-1")
            .Container(1, 2000, 10)
            .Build());
  }
  Run(PodBuilder("default/n2-large")
          .Annotation("nvidia.com/use-gpuuuid", "GPU-2")
          .Container(1, 5000, 10)
          .Build());
  Run(PodBuilder("default/n2-small")
          .Annotation("nvidia.com/use-gpuuuid", "GPU-2")
          .Container(1, 2000, 10)
          .Build());
  Explanation e = Explain(PodBuilder("default/p").Container(1, 5000, 10).Build());
  ASSERT_FALSE(e.fits);
  EXPECT_EQ(e.message, "0/2 nodes are available: 2 1/1 CardInsufficientMemory.");
  EXPECT_FALSE(e.never_fits);
  ASSERT_TRUE(e.remedy);
  EXPECT_EQ(e.remedy->node, "n2");
  EXPECT_THAT(e.remedy->pods, ElementsAre("default/n2-large"));
  EXPECT_EQ(e.remedy->freed_mem, 5000);
  // The explanation changed nothing.
  EXPECT_EQ(state_.pods().size(), 5U);
  EXPECT_EQ(state_.node("n2")->usage[0].used_mem, 7000);
}

TEST_F(ExplainTest, TwoPodsWhenNoSinglePodIsEnough) {
  AddNode("n1", {SharingGpu("GPU-1", 8000)});
  for (int i = 0; i < 4; ++i) {
    Run(PodBuilder("default/q" + std::to_string(i))
            .Annotation("nvidia.com/use-gpuuuid", "GPU-1")
            .Container(1, 2000, 10)
            .Build());
  }
  Explanation e = Explain(PodBuilder("default/p").Container(1, 4000, 10).Build());
  ASSERT_TRUE(e.remedy);
  EXPECT_THAT(e.remedy->pods, ElementsAre("default/q0", "default/q1"));
  EXPECT_TRUE(e.search_complete);
}

TEST_F(ExplainTest, APodNoNodeCanEverHoldSaysSo) {
  AddNode("n1", {SharingGpu("GPU-1"), SharingGpu("GPU-2", 32768, 0, 1)});
  Run(PodBuilder("default/r").Container(1, 1000, 10).Build());
  Explanation e = Explain(PodBuilder("default/p").Container(3, 1000, 10).Build());
  EXPECT_FALSE(e.fits);
  EXPECT_TRUE(e.never_fits);
  EXPECT_FALSE(e.remedy);
  EXPECT_EQ(NodeOf(e, "n1").reason, "NodeInsufficientDevice");
  EXPECT_THAT(FormatExplanation(e), HasSubstr("no node can hold it even empty"));
}

TEST_F(ExplainTest, MigGpusShowTheirSliceMapAndWhereAnInstanceCouldGo) {
  AddNode("m", {A100Mig("GPU-m")});
  Run(PodBuilder("default/three").MigMode().Container(1, 19000).Build());
  Explanation e = Explain(PodBuilder("default/p").MigMode().Container(1, 4000).Build());
  ASSERT_TRUE(e.fits);
  const GpuExplanation& g = NodeOf(e, "m").gpus[0];
  EXPECT_EQ(g.memory_slices, 8U);
  ASSERT_EQ(g.instances.size(), 1U);
  EXPECT_EQ(g.instances[0].pod, "default/three");
  EXPECT_EQ(g.instances[0].profile, "3g.20gb");
  ASSERT_FALSE(g.options.empty());
  EXPECT_EQ(g.options[0].profile, "1g.5gb");
  // Every free slice outside the 3g instance.
  const uint32_t taken = g.instances[0].start;
  for (uint32_t s : g.options[0].starts) EXPECT_TRUE(s < taken || s >= taken + 4) << s;
  EXPECT_EQ(g.options[0].starts.size(), 3U + (taken == 4 ? 1U : 0U));
  EXPECT_THAT(FormatExplanation(e), HasSubstr("slices |"));
}

TEST_F(ExplainTest, AnInvalidRequestNamesTheProblem) {
  AddNode("n1", {SharingGpu("GPU-1")});
  Explanation e = Explain(PodBuilder("default/p")
                              .Annotation("hami.io/node-scheduler-policy", "fastest")
                              .Container(1, 1000, 10)
                              .Build());
  EXPECT_THAT(e.error, HasSubstr("hami.io/node-scheduler-policy"));
  EXPECT_EQ(ExplanationToJson(e).at("error"), e.error);
}

TEST_F(ExplainTest, TheSearchStopsAtItsBudgetAndSaysSo) {
  AddNode("n1", {SharingGpu("GPU-1", 8000)});
  for (int i = 0; i < 8; ++i) {
    Run(PodBuilder("default/q" + std::to_string(i))
            .Annotation("nvidia.com/use-gpuuuid", "GPU-1")
            .Container(1, 1000, 10)
            .Build());
  }
  ExplainLimits tight;
  tight.max_evaluations = 3;
  Explanation e = Explain(PodBuilder("default/p").Container(1, 4000, 10).Build(), tight);
  EXPECT_FALSE(e.remedy);
  EXPECT_FALSE(e.search_complete);
  EXPECT_THAT(FormatExplanation(e), HasSubstr("budget"));
  EXPECT_FALSE(ExplanationToJson(e).at("searchComplete").get<bool>());
}

TEST_F(ExplainTest, OnlyAFewNodesGetFullGpuDetailsAndTheNamedOneAlways) {
  for (int i = 0; i < 6; ++i)
    AddNode("n" + std::to_string(i), {SharingGpu("GPU-" + std::to_string(i), 8000)});
  ExplainLimits limits;
  limits.max_detailed_nodes = 2;
  limits.detail_node = "n5";
  Explanation e = Explain(PodBuilder("default/p").Container(1, 9000, 10).Build(), limits);
  std::vector<std::string> detailed;
  for (const auto& n : e.nodes) {
    if (n.detailed) detailed.push_back(n.name);
    // Every GPU keeps its reason, detailed or not.
    EXPECT_EQ(n.gpus.at(0).reason, "CardInsufficientMemory") << n.name;
  }
  EXPECT_THAT(detailed, ElementsAre("n0", "n1", "n5"));
  EXPECT_THAT(FormatExplanation(e), HasSubstr("GPUs shown for 3 of 6 nodes"));
  EXPECT_FALSE(ExplanationToJson(e)["nodes"][2]["gpus"][0].contains("usedMemMiB"));
}

TEST_F(ExplainTest, JsonCarriesTheVerdictsAndTheRemedy) {
  AddNode("n1", {SharingGpu("GPU-1", 8000)});
  Run(PodBuilder("default/q").Container(1, 6000, 10).Build());
  Explanation e = Explain(PodBuilder("default/p").Container(1, 4000, 10).Build());
  codec::Json j = ExplanationToJson(e);
  EXPECT_EQ(j.at("pod"), "default/p");
  EXPECT_FALSE(j.at("fits").get<bool>());
  EXPECT_EQ(j.at("nodes")[0].at("gpus")[0].at("reason"), "CardInsufficientMemory");
  EXPECT_EQ(j.at("remedy").at("pods")[0], "default/q");
}

}  // namespace
}  // namespace tessera::sched
