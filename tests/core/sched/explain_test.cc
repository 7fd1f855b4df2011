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
using ::testing::Not;
using testing::PodBuilder;
using testing::RtxPro6000Mig;
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
  EXPECT_EQ(FormatNodeStatus(NodeOf(e, "b").status), "1/1 CardInsufficientMemory");
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
  EXPECT_EQ(FormatNodeStatus(NodeOf(e, "n1").status), "NodeInsufficientDevice");
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

TEST_F(ExplainTest, ARequestJustAboveAProfileNamesTheProfileAndTheMemoryToAsk) {
  AddNode("m", {A100Mig("GPU-m")});
  // 20000 MiB is 32 MiB over 3g.20gb: it takes the whole GPU's 7g.40gb, and a pod already on
  // the GPU leaves no room for that.
  Run(PodBuilder("default/small").MigMode().Container(1, 4000).Build());
  Explanation e = Explain(PodBuilder("default/p").MigMode().Container(1, 20000).Build());
  ASSERT_FALSE(e.fits);
  ASSERT_EQ(e.near_misses.size(), 1U);
  EXPECT_EQ(e.near_misses[0].nearest_profile, "3g.20gb");
  EXPECT_THAT(FormatExplanation(e),
              HasSubstr("  near miss: container c0 asks 20000 MiB, 32 MiB over 3g.20gb (19968 "
                        "MiB) on NVIDIA A100-SXM4-40GB, so it takes a 7g.40gb (40192 MiB): ask at "
                        "most 19968 MiB to fit 3g.20gb\n"));
  const codec::Json j = ExplanationToJson(e);
  ASSERT_EQ(j.at("nearMisses").size(), 1U);
  EXPECT_EQ(j["nearMisses"][0].at("container"), "c0");
  EXPECT_EQ(j["nearMisses"][0].at("nearestProfile"), "3g.20gb");
  EXPECT_EQ(j["nearMisses"][0].at("nearestMemMiB"), 19968);
  EXPECT_EQ(j["nearMisses"][0].at("takenProfile"), "7g.40gb");
  EXPECT_EQ(j["nearMisses"][0].at("requestedMemMiB"), 20000);
  // At the profile's memory there is nothing to say.
  Explanation at = Explain(PodBuilder("default/q").MigMode().Container(1, 19968).Build());
  EXPECT_TRUE(at.near_misses.empty());
  EXPECT_FALSE(ExplanationToJson(at).contains("nearMisses"));
}

TEST_F(ExplainTest, AQuotaFailureNamesTheQuotaItsLimitsAndWhatToFreeNotANode) {
  AddNode("gpu-n1", {SharingGpu("GPU-1", 32768)});
  AddNode("gpu-n2", {SharingGpu("GPU-2", 32768)});
  state_.UpsertQuota(
      {"apps",
       "gpu-quota",
       {{"limits.nvidia.com/gpumem", "30000"}, {"limits.nvidia.com/gpucores", "100"}}});
  Run(PodBuilder("apps/llm-1")
          .Annotation("nvidia.com/use-gpuuuid", "GPU-2")
          .Container(1, 24000, 40)
          .Build());
  Explanation e = Explain(PodBuilder("apps/p").Container(1, 8000, 20).Build());
  ASSERT_FALSE(e.fits);
  ASSERT_TRUE(e.quota);
  EXPECT_EQ(e.quota->ns, "apps");
  EXPECT_TRUE(e.quota->blocks);
  EXPECT_EQ(e.quota->free_mem, 2000);
  EXPECT_EQ(e.quota->free_cores, 0);
  ASSERT_EQ(e.quota->limits.size(), 2U);
  const std::string text = FormatExplanation(e);
  EXPECT_THAT(text, HasSubstr("  quota of namespace apps:\n"
                              "    ResourceQuota gpu-quota limits.nvidia.com/gpumem: 24000 used + "
                              "8000 asked = 32000 > 30000 MiB (exceeded by 2000 MiB)\n"
                              "    ResourceQuota gpu-quota limits.nvidia.com/gpucores: 40 used + "
                              "20 asked = 60 <= 100 cores\n"));
  EXPECT_THAT(text, HasSubstr("what would make it fit: free 2000 MiB of namespace apps's quota, "
                              "or raise it (apps/llm-1 leaving does)\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("leaving node")));
  const codec::Json j = ExplanationToJson(e).at("quota");
  EXPECT_EQ(j.at("namespace"), "apps");
  EXPECT_TRUE(j.at("blocks").get<bool>());
  EXPECT_EQ(j.at("freeMemMiB"), 2000);
  EXPECT_FALSE(j.contains("freeCores"));
  EXPECT_EQ(j.at("remedy"), "free 2000 MiB of namespace apps's quota, or raise it");
  const codec::Json& mem = j.at("limits")[0];
  EXPECT_EQ(mem.at("quota"), "gpu-quota");
  EXPECT_EQ(mem.at("key"), "limits.nvidia.com/gpumem");
  EXPECT_EQ(mem.at("limit"), 30000);
  EXPECT_EQ(mem.at("used"), 24000);
  EXPECT_EQ(mem.at("request"), 8000);
  EXPECT_TRUE(mem.at("exceeded").get<bool>());
  EXPECT_FALSE(j.at("limits")[1].at("exceeded").get<bool>());
}

TEST_F(ExplainTest, QuotaShortOnMemoryAndCoresNamesBoth) {
  AddNode("n1", {SharingGpu("GPU-1", 32768)});
  state_.UpsertQuota(
      {"apps",
       "gpu-quota",
       {{"limits.nvidia.com/gpumem", "30000"}, {"limits.nvidia.com/gpucores", "50"}}});
  Run(PodBuilder("apps/llm-1").Container(1, 24000, 40).Build());
  Explanation e = Explain(PodBuilder("apps/p").Container(1, 8000, 20).Build());
  ASSERT_TRUE(e.quota);
  EXPECT_EQ(e.quota->free_cores, 10);
  EXPECT_THAT(FormatExplanation(e),
              HasSubstr("free 2000 MiB / 10 cores of namespace apps's quota, or raise it"));
}

TEST_F(ExplainTest, AQuotaTooSmallForThePodAloneIsToBeRaisedNotFreed) {
  AddNode("n1", {SharingGpu("GPU-1", 32768)});
  state_.UpsertQuota({"team", "small", {{"limits.nvidia.com/gpumem", "9000"}}});
  Explanation e = Explain(PodBuilder("team/p").Container(1, 10000).Build());
  ASSERT_TRUE(e.quota);
  EXPECT_TRUE(e.quota->blocks);
  EXPECT_THAT(FormatExplanation(e),
              HasSubstr("what would make it fit: raise namespace team's quota by 1000 MiB (its "
                        "pods hold less than that)\n"));
}

TEST_F(ExplainTest, ANodeProblemInANamespaceWithQuotaRoomIsStillANodeProblem) {
  AddNode("n1", {SharingGpu("GPU-1", 8000)});
  state_.UpsertQuota({"apps", "gpu-quota", {{"limits.nvidia.com/gpumem", "100000"}}});
  Run(PodBuilder("apps/q").Container(1, 6000, 10).Build());
  Explanation e = Explain(PodBuilder("apps/p").Container(1, 4000, 10).Build());
  ASSERT_TRUE(e.quota);
  EXPECT_FALSE(e.quota->blocks);
  EXPECT_THAT(FormatExplanation(e), HasSubstr("1 pod leaving node n1: apps/q"));
}

TEST_F(ExplainTest, AGpuShortOnMemoryAndCoresSaysBothAndWhatEachHolderUses) {
  AddNode("n1", {SharingGpu("GPU-1", 32768)});
  Run(PodBuilder("apps/llm-1").Container(1, 24000, 40).Build());
  Run(PodBuilder("apps/llm-2").Container(1, 4000, 50).Build());
  Explanation e = Explain(PodBuilder("apps/p").Container(1, 8000, 20).Build());
  ASSERT_FALSE(e.fits);
  const GpuExplanation& g = NodeOf(e, "n1").gpus[0];
  EXPECT_EQ(g.reason, "CardInsufficientMemory");  // HAMi's first, unchanged
  ASSERT_EQ(g.checks.size(), 2U);
  EXPECT_EQ(g.checks[0].reason, "CardInsufficientMemory");
  EXPECT_EQ(g.checks[0].detail, "needs 8000 MiB, 4768 free");
  EXPECT_EQ(g.checks[1].reason, "CardInsufficientCore");
  EXPECT_EQ(g.checks[1].detail, "needs 20% cores, 10% free");
  const std::string text = FormatExplanation(e);
  EXPECT_THAT(text, HasSubstr("): CardInsufficientMemory (needs 8000 MiB, 4768 free), "
                              "CardInsufficientCore (needs 20% cores, 10% free)\n"));
  EXPECT_THAT(text, HasSubstr("held by apps/llm-1 (24000 MiB, 40% cores), apps/llm-2 (4000 MiB, "
                              "50% cores)\n"));
  const codec::Json jg = ExplanationToJson(e)["nodes"][0]["gpus"][0];
  EXPECT_EQ(jg.at("checks").size(), 2U);
  EXPECT_EQ(jg["checks"][1].at("reason"), "CardInsufficientCore");
  EXPECT_EQ(jg.at("holders")[0].at("pod"), "apps/llm-1");
  EXPECT_EQ(jg["holders"][0].at("memMiB"), 24000);
  EXPECT_EQ(jg["holders"][0].at("cores"), 40);
}

TEST_F(ExplainTest, AGpuRefusedForWhatItIsListsOnlyThat) {
  AddNode("n1", {SharingGpu("GPU-1", 8000)});
  Run(PodBuilder("default/q").Container(1, 7000, 90).Build());
  Explanation e = Explain(PodBuilder("default/p")
                              .Annotation("nvidia.com/use-gputype", "A100")
                              .Container(1, 4000, 20)
                              .Build());
  const GpuExplanation& g = NodeOf(e, "n1").gpus[0];
  ASSERT_EQ(g.checks.size(), 1U);
  EXPECT_EQ(g.checks[0].reason, "CardTypeMismatch");
}

TEST_F(ExplainTest, TheNodeSummaryCountsTheGpuLinesWhereHamisReasonCountsVisits) {
  AddNode("m", {A100Mig("GPU-0", 0), A100Mig("GPU-1", 1)});
  Run(PodBuilder("default/whole")
          .MigMode()
          .Annotation("nvidia.com/use-gpuuuid", "GPU-1")
          .Container(1, 40000)
          .Build());
  Run(PodBuilder("default/half")
          .MigMode()
          .Annotation("nvidia.com/use-gpuuuid", "GPU-0")
          .Container(1, 19000)
          .Build());
  Explanation e = Explain(PodBuilder("default/p").MigMode().Container(2, 19000).Build());
  ASSERT_FALSE(e.fits);
  const NodeExplanation& n = NodeOf(e, "m");
  // HAMi's pass takes GPU-0's free half, then counts GPU-0 again (its second visit) and GPU-1 as
  // short of memory: three counts for two GPUs. The wire reason stays HAMi's.
  EXPECT_EQ(FormatNodeStatus(n.status),
            "1/2 AllocatedCardsInsufficientRequest, 2/2 CardInsufficientMemory");
  EXPECT_EQ(NodeSummary(n, e.devices_asked),
            "2 GPUs: 1 could take one device, 1 CardInsufficientMemory; too few for the 2 "
            "devices asked");
  const std::string text = FormatExplanation(e);
  EXPECT_THAT(text, HasSubstr("  node m: 2 GPUs: 1 could take one device, 1 "
                              "CardInsufficientMemory; too few for the 2 devices asked\n"
                              "    (HAMi's reason, counting GPU visits: 1/2 "
                              "AllocatedCardsInsufficientRequest, 2/2 CardInsufficientMemory)\n"));
  const codec::Json jn = ExplanationToJson(e)["nodes"][0];
  EXPECT_EQ(jn.at("reason"), FormatNodeStatus(n.status));
  EXPECT_EQ(jn.at("gpuCounts").at("passes"), 1);
  EXPECT_EQ(jn.at("gpuCounts").at("CardInsufficientMemory"), 1);
  // The kube-scheduler message keeps HAMi's counts.
  EXPECT_THAT(e.message, HasSubstr("1/2 AllocatedCardsInsufficientRequest, 2/2 "
                                   "CardInsufficientMemory"));
}

TEST_F(ExplainTest, ANodeLineThatAlreadyCountsItsGpusStaysHamis) {
  AddNode("n1", {SharingGpu("GPU-1", 8000)});
  Run(PodBuilder("default/q").Container(1, 6000, 10).Build());
  Explanation e = Explain(PodBuilder("default/p").Container(1, 4000, 10).Build());
  const std::string text = FormatExplanation(e);
  EXPECT_THAT(text, HasSubstr("  node n1: 1/1 CardInsufficientMemory\n    GPU 0"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("HAMi's reason")));
  EXPECT_EQ(ExplanationToJson(e)["nodes"][0].at("summary"), "1 GPU: 1 CardInsufficientMemory");
}

// Explain runs the cycle's own phases (FilterEveryNode), so each rule of the parse, the
// preferences, the quota, the per-GPU checks and the equivalence cache reads alike in both: a
// rule the filter has and explain lacked (or explain's own copy of one) would show here as a
// node whose verdict, reason or preemption answer differs from the filter's on that node alone.
TEST_F(ExplainTest, EveryVerdictIsTheFiltersForEachRuleOfThePod) {
  AddNode("v100-a", {SharingGpu("GPU-va", 15360), SharingGpu("GPU-va2", 15360, 1, 1)});
  AddNode("v100-b", {SharingGpu("GPU-vb", 15360), SharingGpu("GPU-vb2", 15360, 1, 1)});
  AddNode("mig", {A100Mig("GPU-mig", 0), A100Mig("GPU-mig1", 1)});
  AddNode("mig-2", {A100Mig("GPU-mig2", 0), A100Mig("GPU-mig3", 1)});
  state_.UpsertQuota({"capped", "gpu-quota", {{"limits.nvidia.com/gpumem", "12000"}}});
  Run(PodBuilder("default/on-v100a")
          .Annotation("nvidia.com/use-gpuuuid", "GPU-va")
          .Container(1, 9000, 30)
          .Build());
  Run(PodBuilder("default/on-mig")
          .Annotation("nvidia.com/use-gpuuuid", "GPU-mig")
          .Container(1, 19000, 0)
          .Build());
  Run(PodBuilder("capped/held").Container(1, 6000, 10).Build());
  const std::vector<model::Pod> pods = {
      PodBuilder("default/plain").Container(1, 4000, 20).Build(),
      PodBuilder("default/two").Container(2, 8000, 50).Build(),
      PodBuilder("default/three").Container(3, 1000, 10).Build(),
      PodBuilder("default/mig-only")
          .Annotation("nvidia.com/vgpu-mode", "mig")
          .Container(2, 19000, 0)
          .Build(),
      PodBuilder("default/no-mig")
          .Annotation("nvidia.com/vgpu-mode", "hami-core")
          .Container(1, 16000, 0)
          .Build(),
      PodBuilder("default/a100")
          .Annotation("nvidia.com/use-gputype", "A100")
          .Container(1, 30000, 0)
          .Build(),
      PodBuilder("default/not-v100")
          .Annotation("nvidia.com/nouse-gputype", "V100")
          .Container(1, 4000, 0)
          .Build(),
      PodBuilder("default/uuid")
          .Annotation("nvidia.com/use-gpuuuid", "GPU-va,GPU-mig2")
          .Container(1, 7000, 10)
          .Build(),
      PodBuilder("default/not-uuid")
          .Annotation("nvidia.com/nouse-gpuuuid", "GPU-vb,GPU-vb2")
          .Container(1, 7000, 80)
          .Build(),
      PodBuilder("default/mutex")
          .Annotation("hami.io/gpu-scheduler-policy", "mutex")
          .Container(2, 1000, 10)
          .Build(),
      PodBuilder("default/numa")
          .Annotation("nvidia.com/numa-bind", "true")
          .Container(2, 1000, 10)
          .Build(),
      PodBuilder("default/exclusive").Container(1, 0, 100).Build(),
      PodBuilder("capped/within").Container(1, 5000, 10).Build(),
      PodBuilder("capped/over").Container(1, 8000, 10).Build(),
      PodBuilder("capped/over-mig")
          .Annotation("nvidia.com/vgpu-mode", "mig")
          .Container(1, 5000, 0)
          .Build(),
      PodBuilder("default/bad-policy")
          .Annotation("hami.io/gpu-scheduler-policy", "fastest")
          .Container(1, 1000, 10)
          .Build(),
  };
  for (const model::Pod& pod : pods) {
    SCOPED_TRACE(pod.Key());
    const Explanation e = Explain(pod);
    const Decision all = scheduler_.Evaluate(pod, nullptr, 0);
    if (all.invalid_request()) {
      EXPECT_EQ(e.error, all.message);
      continue;
    }
    ASSERT_TRUE(e.error.empty()) << e.error;
    EXPECT_EQ(e.fits, all.scheduled());
    if (!e.fits) {
      EXPECT_EQ(e.message, all.message);
    }
    ASSERT_EQ(e.nodes.size(), 4U);
    for (const NodeExplanation& n : e.nodes) {
      SCOPED_TRACE(n.name);
      const std::vector<std::string> one{n.name};
      const Decision d = scheduler_.Evaluate(pod, &one, 0);
      EXPECT_EQ(n.fits, d.scheduled());
      if (d.scheduled()) continue;
      EXPECT_EQ(FormatNodeStatus(n.status), FormatNodeStatus(d.failed_nodes.at(n.name)));
      if (!e.fits) {
        EXPECT_EQ(n.fits_when_empty, d.failed_nodes.at(n.name).resolvable());
      }
    }
  }
}

// The explanation leads with what the request is on each GPU model the pod may use, how many
// such devices each node could still take, and the remedy, before any node's lines.
TEST_F(ExplainTest, ItStartsWithTheRequestPerGpuModelTheRoomPerNodeAndTheRemedy) {
  AddNode("a100", {A100Mig("GPU-a100")});
  AddNode("rtx", {RtxPro6000Mig("GPU-rtx")});
  AddNode("v100", {SharingGpu("GPU-v100", 32768)});
  // One 3g.20gb left on the A100, two 1g.24gb on the RTX PRO 6000, the V100 full.
  Run(PodBuilder("default/on-a100")
          .Annotation("nvidia.com/use-gpuuuid", "GPU-a100")
          .Container(1, 19000, 0)
          .Build());
  Run(PodBuilder("default/on-rtx")
          .Annotation("nvidia.com/use-gpuuuid", "GPU-rtx")
          .Container(2, 19000, 0)
          .Build());
  Run(PodBuilder("default/on-v100")
          .Annotation("nvidia.com/use-gpuuuid", "GPU-v100")
          .Container(1, 30000, 50)
          .Build());
  const Explanation e = Explain(PodBuilder("default/p").Container(3, 19000, 0).Build());
  ASSERT_FALSE(e.fits);
  ASSERT_EQ(e.mappings.size(), 3U);
  EXPECT_EQ(e.mappings[0].profile, "3g.20gb");
  EXPECT_EQ(e.mappings[1].profile, "1g.24gb");
  EXPECT_FALSE(e.mappings[2].mig);
  EXPECT_EQ(NodeOf(e, "a100").room, 1);
  EXPECT_EQ(NodeOf(e, "rtx").room, 2);
  EXPECT_EQ(NodeOf(e, "v100").room, 0);
  const std::string text = FormatExplanation(e);
  const std::string summary =
      "  asks for 3 × 3g.20gb on A100-SXM4-40GB, or 3 × 1g.24gb on RTX PRO 6000 Blackwell "
      "Server Edition, or 3 × 19000 MiB on Tesla V100-PCIE-32GB, on one node\n"
      "  room now, in such devices per node (its GPUs each on its own, the quota aside): a100 1, "
      "rtx 2; 1 node none\n"
      "what would make it fit: 1 pod leaving node ";
  EXPECT_THAT(text, HasSubstr(summary));
  // The summary comes right after the first line, before every node's line.
  EXPECT_EQ(text.find("  asks for "), text.find('\n') + 1);
  EXPECT_LT(text.find("what would make it fit"), text.find("  node "));
  const codec::Json j = ExplanationToJson(e);
  EXPECT_EQ(j.at("asks").at("devices"), 3);
  EXPECT_EQ(j.at("asks").at("summary"), summary.substr(2, summary.find('\n') - 2));
  EXPECT_EQ(j.at("asks").at("byModel")[0].at("profile"), "3g.20gb");
  EXPECT_EQ(j.at("asks").at("byModel")[0].at("memMiB"), 19968);
  EXPECT_EQ(j.at("asks").at("byModel")[2].at("memMiB"), 19000);
  EXPECT_FALSE(j.at("asks").at("byModel")[2].at("mig").get<bool>());
  EXPECT_EQ(j.at("nodes")[1].at("room"), 2);
}

TEST_F(ExplainTest, AModelNoDeviceOfTheRequestFitsSaysSoAndModelsThePodExcludesAreLeftOut) {
  AddNode("a100", {A100Mig("GPU-a100")});
  AddNode("v100", {SharingGpu("GPU-v100", 32768)});
  const Explanation big = Explain(PodBuilder("default/big").Container(1, 50000, 0).Build());
  EXPECT_EQ(FormatMappings(big),
            "asks for nothing on A100-SXM4-40GB (no profile holds 50000 MiB), or nothing on "
            "Tesla V100-PCIE-32GB (50000 MiB is more than its 32768 MiB, 100% cores)");
  const Explanation mig = Explain(PodBuilder("default/mig").MigMode().Container(1, 4000).Build());
  EXPECT_EQ(FormatMappings(mig), "asks for 1 × 1g.5gb on A100-SXM4-40GB");
}

// Model names drop the vendor's prefix, unless two would then read alike.
TEST(ShortModelNamesTest, NamesReadingAlikeOnceShortenedStayInFull) {
  EXPECT_THAT(ShortModelNames({"NVIDIA A100-SXM4-40GB", "NVIDIA-Tesla T4", "H100"}),
              ElementsAre("A100-SXM4-40GB", "Tesla T4", "H100"));
  EXPECT_THAT(
      ShortModelNames({"NVIDIA A100-SXM4-40GB", "NVIDIA-A100-SXM4-40GB", "NVIDIA-Tesla T4"}),
      ElementsAre("NVIDIA A100-SXM4-40GB", "NVIDIA-A100-SXM4-40GB", "Tesla T4"));
  EXPECT_THAT(ShortModelNames({"NVIDIA ", "NVIDIA"}), ElementsAre("NVIDIA ", "NVIDIA"));
}

// GPU UUIDs are printed whole: those of one node often differ only at their end.
TEST_F(ExplainTest, GpuUuidsSharingAPrefixArePrintedWhole) {
  AddNode("n1", {SharingGpu("GPU-5b1c2d3e-0000-4a4a-8b8b-000000000001", 8000),
                 SharingGpu("GPU-5b1c2d3e-0000-4a4a-8b8b-000000000002", 8000, 0, 1)});
  const std::string text =
      FormatExplanation(Explain(PodBuilder("default/p").Container(1, 9000, 0).Build()));
  EXPECT_THAT(text, HasSubstr("GPU 0 GPU-5b1c2d3e-0000-4a4a-8b8b-000000000001 ("));
  EXPECT_THAT(text, HasSubstr("GPU 1 GPU-5b1c2d3e-0000-4a4a-8b8b-000000000002 ("));
}

// One word for one thing: a device is what the pod asks for (one unit of nvidia.com/gpu), an
// instance a MIG instance on a GPU; the slice notation is explained once.
TEST_F(ExplainTest, DevicesAreAskedInstancesHeldAndTheSliceNotationIsExplainedOnce) {
  AddNode("m", {A100Mig("GPU-m"), A100Mig("GPU-m1", 1)});
  Run(PodBuilder("default/three").MigMode().Container(1, 19000).Build());
  const std::string text =
      FormatExplanation(Explain(PodBuilder("default/p").MigMode().Container(1, 4000).Build()));
  EXPECT_THAT(text, HasSubstr("one device could go:"));
  EXPECT_THAT(text, Not(HasSubstr("one instance could go")));
  EXPECT_THAT(text, HasSubstr("=3g.20gb@"));
  EXPECT_THAT(text, HasSubstr("+4 default/three"));
  const std::string legend = "profile@start+size: the instance's first slice and how many it spans";
  ASSERT_THAT(text, HasSubstr(legend));
  EXPECT_EQ(text.find(legend), text.rfind(legend));
}

// The filter's per-GPU checks, which explain lists: the first is the filter's reason (GpuReasons,
// which HAMi's node reason counts); with `every`, the rest follow in the filter's order, except
// on a GPU refused for what it is.
TEST_F(ExplainTest, FailedGpuChecksStartWithTheFiltersReasonAndListTheRestInItsOrder) {
  AddNode("n1", {SharingGpu("GPU-1", 8000)});
  Run(PodBuilder("default/held").Container(1, 6000, 90).Build());
  const state::NodeState& node = *state_.node("n1");
  const model::Pod pod = PodBuilder("default/p").Container(1, 4000, 20).Build();
  const ParsedPod parsed = ParsePod(pod, state_.config().nvidia, PolicyDefaults{});
  const ContainerRequest& k = parsed.request.value().slots[0];
  const PodPreferences& prefs = parsed.prefs->value();
  EXPECT_THAT(FailedGpuChecks(node, 0, k, prefs, /*every=*/true),
              ElementsAre(GpuCheck::kMemory, GpuCheck::kCores));
  EXPECT_THAT(FailedGpuChecks(node, 0, k, prefs, /*every=*/false), ElementsAre(GpuCheck::kMemory));
  EXPECT_THAT(GpuReasons(node, k, prefs), ElementsAre("CardInsufficientMemory"));
  EXPECT_EQ(ReasonOf(GpuCheck::kCores), "CardInsufficientCore");

  PodPreferences other_type = prefs;
  other_type.use_types = {"H100"};
  EXPECT_THAT(FailedGpuChecks(node, 0, k, other_type, /*every=*/true),
              ElementsAre(GpuCheck::kType));
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
