#include "core/sched/filter_pass.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/sched/scheduler.h"
#include "support/builders.h"
#include "support/decisions.h"

namespace tessera::sched {
namespace {

using testing::A100Mig;
using testing::NodeWith;
using testing::PodBuilder;
using testing::SharingGpu;

// Runs the tasks on the calling thread, last first: a share's result must not depend on when
// it runs.
class ReversedRunner final : public TaskRunner {
 public:
  explicit ReversedRunner(size_t concurrency) : concurrency_(concurrency) {}
  size_t concurrency() const override { return concurrency_; }
  void Run(size_t count, const std::function<void(size_t)>& task) override {
    ++runs;
    for (size_t i = count; i-- > 0;) task(i);
  }
  int runs = 0;

 private:
  size_t concurrency_;
};

class FilterPassTest : public ::testing::Test {
 protected:
  FilterPassTest() : state_(config::SchedulerConfig{}), scheduler_(state_, defaults_) {
    // 30 nodes in a few states: shared GPUs of two sizes, MIG GPUs, some nodes partly used.
    for (int n = 0; n < 30; ++n) {
      const std::string name = "node-" + std::to_string(n);
      if (n % 5 == 4) {
        state_.UpsertNode(NodeWith(name, {A100Mig("GPU-" + name)}));
      } else {
        state_.UpsertNode(NodeWith(name, {SharingGpu("GPU-" + name + "-0", n % 2 ? 16000 : 32768),
                                          SharingGpu("GPU-" + name + "-1", 16000, 1, 1)}));
      }
    }
    for (int p = 0; p < 25; ++p) {
      const std::vector<std::string> only = {"node-" + std::to_string((p * 7) % 30)};
      (void)scheduler_.Schedule(
          PodBuilder("ns/fill-" + std::to_string(p)).Container(1, 3000 + 500 * (p % 5)).Build(),
          &only, 1);
    }
  }

  // Everything a decision says, as comparable text, with the filter on `runner` (nullptr: one
  // pass on this thread).
  std::string Outcome(const model::Pod& pod, TaskRunner* runner, bool cache) {
    scheduler_.set_filter_runner(runner, /*min_nodes_per_thread=*/1);
    scheduler_.set_equivalence_cache(cache);
    const Decision d = scheduler_.Evaluate(pod, nullptr, 1);
    std::string text = d.node + "|" + d.message;
    for (const auto& [k, v] : d.annotations) text += "|" + k + "=" + v;
    for (const auto& [node, status] : d.failed_nodes) {
      text += "|" + node + ":" + FormatNodeStatus(status) + (status.resolvable() ? "" : "!");
    }
    return text;
  }

  // The filter phase alone: the chosen node and its devices, and how many nodes were refused
  // (with the rank bound, only nodes that were fitted can be).
  std::string Chosen(const model::Pod& pod, TaskRunner* runner, size_t shares,
                     bool skip_outranked = false) {
    ParsedPod parsed = ParsePod(pod, config::NvidiaConfig{}, defaults_);
    const CycleState cycle(parsed.request.value(), parsed.prefs->value(), parsed.cpu_milli,
                           scheduler_.demand_mix(), scheduler_.mig_demand_mix(), defaults_);
    FilterOutcome out = FilterNodes(cycle, state_.node_list(), state_.state_class_bound(),
                                    /*collect_refusals=*/true, runner, shares, skip_outranked);
    std::string text = out.best == nullptr ? "none" : out.best->name;
    if (out.best != nullptr) {
      out.CompleteBestFit(cycle);
      for (const auto& slot : out.best_fit().slots) {
        for (const auto& a : slot) text += " dev" + std::to_string(a.device);
      }
    }
    return text + " refused " + std::to_string(out.refused.size());
  }

  PolicyDefaults defaults_;
  state::ClusterState state_;
  Scheduler scheduler_;
};

// The UUID bits let NamesAnyGpuOf skip comparing strings; its answers are those of comparing
// every UUID, for pods naming one of a node's GPUs, none, or several, and for preferences made
// by hand (no bits worked out).
TEST_F(FilterPassTest, WhetherAPodNamesANodesGpuIsAnsweredAsByComparingEveryUuid) {
  const auto compared = [](const PodPreferences& prefs, const state::NodeState& node) {
    for (const model::GpuDevice& d : node.devices) {
      for (const auto* list : {&prefs.use_uuids, &prefs.nouse_uuids}) {
        if (std::find(list->begin(), list->end(), d.uuid) != list->end()) return true;
      }
    }
    return false;
  };
  std::vector<std::string> annotations = {"GPU-none", "GPU-a,GPU-b,GPU-c"};
  for (const state::NodeState* node : state_.node_list()) {
    for (const model::GpuDevice& d : node->devices) annotations.push_back("GPU-x," + d.uuid);
  }
  int named = 0;
  for (const std::string& value : annotations) {
    for (const char* key : {"nvidia.com/use-gpuuuid", "nvidia.com/nouse-gpuuuid"}) {
      const model::Pod pod = PodBuilder("ns/p").Container(1, 1000).Annotation(key, value).Build();
      const ParsedPod parsed = ParsePod(pod, config::NvidiaConfig{}, defaults_);
      const PodPreferences& prefs = parsed.prefs->value();
      ASSERT_FALSE(prefs.named_uuid_bits.empty());
      PodPreferences by_hand;
      by_hand.use_uuids = prefs.use_uuids;
      by_hand.nouse_uuids = prefs.nouse_uuids;
      for (const state::NodeState* node : state_.node_list()) {
        const bool expected = compared(prefs, *node);
        named += expected ? 1 : 0;
        EXPECT_EQ(NamesAnyGpuOf(prefs, *node), expected)
            << key << "=" << value << " " << node->name;
        EXPECT_EQ(NamesAnyGpuOf(by_hand, *node), expected) << "by hand, " << node->name;
      }
    }
  }
  EXPECT_EQ(named, 2 * 54);  // each GPU named once in each annotation: 24 nodes of 2, 6 of 1
}

TEST_F(FilterPassTest, AnyNumberOfSharesChoosesAsOnePass) {
  const std::vector<model::Pod> pods = {
      PodBuilder("ns/small").Container(1, 2000).Build(),
      PodBuilder("ns/large").Container(1, 20000).Build(),
      PodBuilder("ns/two").Container(2, 12000).Build(),
      PodBuilder("ns/mig").Container(1, 9000).MigMode().Build(),
      PodBuilder("ns/none").Container(3, 1000).Build(),
      PodBuilder("ns/spread")
          .Container(1, 2000)
          .Annotation("hami.io/node-scheduler-policy", "spread")
          .Build(),
      PodBuilder("ns/named")
          .Container(1, 2000)
          .Annotation("nvidia.com/nouse-gpuuuid", "GPU-node-3-0")
          .Build(),
  };
  for (const model::Pod& pod : pods) {
    for (bool cache : {true, false}) {
      SCOPED_TRACE(pod.Key() + (cache ? " cached" : " uncached"));
      const std::string one = Outcome(pod, nullptr, cache);
      for (size_t shares : {2U, 3U, 7U, 30U, 100U}) {
        ReversedRunner runner(shares);
        EXPECT_EQ(Outcome(pod, &runner, cache), one) << shares << " shares";
        EXPECT_EQ(runner.runs, 1);
      }
    }
    const std::string one = Chosen(pod, nullptr, 1);
    const std::string chosen = one.substr(0, one.find(" refused"));
    for (size_t shares : {2U, 5U, 30U}) {
      ReversedRunner runner(shares);
      EXPECT_EQ(Chosen(pod, &runner, shares), one) << pod.Key() << ", " << shares << " shares";
      // With the rank bound each share skips what its own best outranks: the same choice.
      const std::string bounded = Chosen(pod, &runner, shares, /*skip_outranked=*/true);
      EXPECT_EQ(bounded.substr(0, bounded.find(" refused")), chosen)
          << pod.Key() << ", " << shares << " shares, rank bound";
    }
    const std::string bounded = Chosen(pod, nullptr, 1, /*skip_outranked=*/true);
    EXPECT_EQ(bounded.substr(0, bounded.find(" refused")), chosen) << pod.Key() << ", rank bound";
  }
}

TEST_F(FilterPassTest, OnePassWithoutTheCacheKeepsOnlyTheFitsItMayNeed) {
  // Nodes that take no pod at all (kUnusable) among them, first and in the middle.
  for (const char* bare : {"a-bare", "node-15-bare"}) {
    model::Node node;
    node.name = bare;
    state_.UpsertNode(node);
  }
  const model::Pod pod = PodBuilder("ns/small").Container(1, 2000).Build();
  ParsedPod parsed = ParsePod(pod, config::NvidiaConfig{}, defaults_);
  const CycleState cycle(parsed.request.value(), parsed.prefs->value(), parsed.cpu_milli,
                         scheduler_.demand_mix(), scheduler_.mig_demand_mix(), defaults_);
  // Every node fitted (no rank bound): what the pass keeps of fits it made.
  const FilterOutcome kept = FilterNodes(cycle, state_.node_list(), /*state_class_bound=*/0,
                                         /*collect_refusals=*/true, nullptr, 1, false);
  ReversedRunner runner(3);  // shares choose afterwards: they keep every fit
  const FilterOutcome all = FilterNodes(cycle, state_.node_list(), /*state_class_bound=*/0,
                                        /*collect_refusals=*/true, &runner, 3, false);
  ASSERT_NE(kept.best, nullptr);
  EXPECT_EQ(kept.best, all.best);
  const auto fitting = static_cast<size_t>(std::count_if(all.evaluated.begin(), all.evaluated.end(),
                                                         [](const auto& e) { return e.fits; }));
  EXPECT_GT(fitting, 20U);
  EXPECT_EQ(all.fits.size(), fitting);
  // One fit per change of the best at most, and the best's is the one kept last.
  EXPECT_LT(kept.fits.size(), fitting / 2);
  // Nor an entry per fitting node: the dropped fits' entries go too.
  EXPECT_LT(kept.evaluated.size(), all.evaluated.size() - fitting / 2);
  ASSERT_EQ(kept.best_fit().slots.size(), all.best_fit().slots.size());
  EXPECT_EQ(kept.best_fit().slots[0][0].device, all.best_fit().slots[0][0].device);
  EXPECT_EQ(kept.best_fit().score, all.best_fit().score);
}

// The pass ranks MIG nodes by their plans' figures and leaves the assignments out; the chosen
// node's fit is then worked out in full, equal to a full fit of that node.
TEST_F(FilterPassTest, TheChosenMigNodesFitIsCompletedAsAFullFit) {
  const model::Pod pod = PodBuilder("ns/mig").Container(2, 4000).MigMode().Build();
  ParsedPod parsed = ParsePod(pod, config::NvidiaConfig{}, defaults_);
  const CycleState cycle(parsed.request.value(), parsed.prefs->value(), parsed.cpu_milli,
                         scheduler_.demand_mix(), scheduler_.mig_demand_mix(), defaults_);
  for (size_t bound : {size_t{0}, state_.state_class_bound()}) {
    SCOPED_TRACE(bound == 0 ? "every node" : "equivalence cache");
    FilterOutcome out = FilterNodes(cycle, state_.node_list(), bound,
                                    /*collect_refusals=*/false, nullptr, 1);
    ASSERT_NE(out.best, nullptr);
    ASSERT_TRUE(out.best->all_mig);
    EXPECT_TRUE(out.best_fit().slots_omitted);
    EXPECT_TRUE(out.best_fit().slots.empty());
    const NodeFit ranked = out.best_fit();
    out.CompleteBestFit(cycle);
    const NodeFit& done = out.best_fit();
    NodeRank rank;
    const NodeFit full = NodeEvaluator(cycle).FitAndRank(*out.best, &rank);
    EXPECT_FALSE(done.slots_omitted);
    EXPECT_EQ(done.score, ranked.score);
    EXPECT_EQ(done.mig_drop, ranked.mig_drop);
    EXPECT_EQ(done.score, full.score);
    ASSERT_EQ(done.slots.size(), full.slots.size());
    ASSERT_EQ(done.slots[0].size(), 2U);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(done.slots[0][i].device, full.slots[0][i].device);
      EXPECT_EQ(done.slots[0][i].mig_profile, full.slots[0][i].mig_profile);
      EXPECT_EQ(done.slots[0][i].placement.start, full.slots[0][i].placement.start);
    }
    EXPECT_EQ(NodeScore(*out.best, done.slots), done.score) << "the plan's totals score alike";
  }
}

TEST_F(FilterPassTest, OneShareOrNoRunnerStaysOnTheCallingThread) {
  ReversedRunner runner(4);
  (void)Chosen(PodBuilder("ns/p").Container(1, 2000).Build(), &runner, 1);
  EXPECT_EQ(runner.runs, 0);
}

TEST_F(FilterPassTest, TheSchedulerSplitsOnlyWhenThereIsEnoughWork) {
  ReversedRunner runner(4);
  scheduler_.set_filter_runner(&runner, /*min_nodes_per_thread=*/10);
  scheduler_.set_equivalence_cache(false);  // 30 evaluations: 3 shares
  const Decision split =
      scheduler_.Evaluate(PodBuilder("ns/p").Container(1, 2000).Build(), nullptr, 1);
  EXPECT_EQ(runner.runs, 1);
  scheduler_.set_filter_runner(&runner, /*min_nodes_per_thread=*/100);
  const Decision alone =
      scheduler_.Evaluate(PodBuilder("ns/p").Container(1, 2000).Build(), nullptr, 1);
  EXPECT_EQ(runner.runs, 1);  // too little work for a second share
  EXPECT_EQ(split.node, alone.node);
  EXPECT_EQ(split.annotations, alone.annotations);
}

}  // namespace
}  // namespace tessera::sched
