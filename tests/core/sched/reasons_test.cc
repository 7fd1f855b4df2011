#include "core/sched/reasons.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/sched/node_status.h"

namespace tessera::sched {
namespace {

// A status counting `counts` over `devices` GPUs.
NodeStatus Counted(std::initializer_list<std::pair<Reason, int32_t>> counts, int32_t devices) {
  NodeStatus status;
  for (const auto& [r, n] : counts) status.counts[r] = n;
  status.devices = devices;
  return status;
}

TEST(ReasonNameTest, EveryReasonHasItsOwnHamiWord) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < kReasonKinds; ++i) {
    const std::string_view name = ReasonName(static_cast<Reason>(i));
    EXPECT_FALSE(name.empty()) << i;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), kReasonKinds);
  EXPECT_EQ(ReasonName(Reason::kCardMigTopologyInfeasible), "CardMigTopologyInfeasible");
}

// --- FormatNodeStatus (HAMi's GenReason) ----------------------------------------------------

TEST(FormatNodeStatusTest, WritesCountOverTotalAndTheReason) {
  EXPECT_EQ(FormatNodeStatus(Counted({{Reason::kCardCordoned, 2}}, 2)), "2/2 CardCordoned");
}

TEST(FormatNodeStatusTest, SortsPiecesByteWiseAndJoinsWithCommaSpace) {
  EXPECT_EQ(FormatNodeStatus(Counted(
                {{Reason::kNumaNotFit, 1}, {Reason::kAllocatedCardsInsufficientRequest, 1}}, 2)),
            "1/2 AllocatedCardsInsufficientRequest, 1/2 NumaNotFit");
}

TEST(FormatNodeStatusTest, SortsByTheWholePieceSoCountsComeFirst) {
  // "10/12 ..." sorts before "2/12 ..." byte-wise, as Go's sort.Strings does.
  EXPECT_EQ(FormatNodeStatus(
                Counted({{Reason::kCardInsufficientMemory, 2}, {Reason::kCardNotHealth, 10}}, 12)),
            "10/12 CardNotHealth, 2/12 CardInsufficientMemory");
  EXPECT_EQ(FormatNodeStatus(
                Counted({{Reason::kCardNotHealth, 1}, {Reason::kCardInsufficientMemory, 3}}, 4)),
            "1/4 CardNotHealth, 3/4 CardInsufficientMemory");
}

TEST(FormatNodeStatusTest, UsesTheExactHamiReasonStrings) {
  EXPECT_EQ(FormatNodeStatus(Counted({{Reason::kCardUuidMismatch, 1},
                                      {Reason::kCardTimeSlicingExhausted, 1},
                                      {Reason::kExclusiveDeviceAllocateConflict, 1}},
                                     3)),
            "1/3 CardTimeSlicingExhausted, 1/3 CardUuidMismatch, 1/3 "
            "ExclusiveDeviceAllocateConflict");
}

TEST(FormatNodeStatusTest, SkipsReasonsWithoutCount) {
  EXPECT_EQ(FormatNodeStatus(Counted({{Reason::kNumaNotFit, 0}, {Reason::kCardNotHealth, 1}}, 1)),
            "1/1 CardNotHealth");
}

TEST(FormatNodeStatusTest, NoReasonsIsEmptyText) {
  EXPECT_EQ(FormatNodeStatus(Counted({}, 4)), "");
}

TEST(FormatNodeStatusTest, ANodeWideReasonHasNoCount) {
  EXPECT_EQ(FormatNodeStatus(NodeStatus::OfNode(Reason::kNodeInsufficientDevice)),
            "NodeInsufficientDevice");
}

TEST(FormatNodeStatusTest, AnUnusableNodeShowsWhy) {
  EXPECT_EQ(FormatNodeStatus(NodeStatus::Unusable("node unregistered")), "node unregistered");
}

TEST(FormatNodeStatusTest, WhetherPreemptionHelpsDoesNotChangeTheText) {
  NodeStatus status = Counted({{Reason::kCardInsufficientMemory, 1}}, 1);
  EXPECT_TRUE(status.resolvable());
  const std::string text = FormatNodeStatus(status);
  status.code = NodeStatus::Code::kUnresolvable;
  EXPECT_FALSE(status.resolvable());
  EXPECT_EQ(FormatNodeStatus(status), text);
  EXPECT_FALSE(NodeStatus::Unusable("x").resolvable());
}

// --- reason words (metric labels, Events) ---------------------------------------------------

TEST(ReasonWordsTest, AreHamisNamesEachOnceAndABoundedWordForAnUnusableNode) {
  std::vector<std::string_view> words;
  ForEachReasonWord(Counted({{Reason::kCardInsufficientMemory, 2}, {Reason::kCardNotHealth, 1}}, 2),
                    [&](std::string_view w) { words.push_back(w); });
  EXPECT_EQ(words, (std::vector<std::string_view>{"CardNotHealth", "CardInsufficientMemory"}));
  words.clear();
  // Not the registration error's text: that would make a metric label per error message.
  ForEachReasonWord(NodeStatus::Unusable("node unusable: bad annotation 'x=1'"),
                    [&](std::string_view w) { words.push_back(w); });
  EXPECT_EQ(words, (std::vector<std::string_view>{"NodeUnusable"}));
}

// --- FormatPodMessage (kube-scheduler's FitError) ---------------------------------------------

TEST(FormatPodMessageTest, CountsNodesPerReasonAndSortsThePieces) {
  EXPECT_EQ(FormatPodMessage({{"node1", Counted({{Reason::kCardInsufficientMemory, 1}}, 1)},
                              {"node2", NodeStatus::OfNode(Reason::kNodeInsufficientDevice)}},
                             2),
            "0/2 nodes are available: 1 1/1 CardInsufficientMemory, 1 NodeInsufficientDevice.");
}

TEST(FormatPodMessageTest, NodesWithTheSameReasonAreCountedTogether) {
  EXPECT_EQ(FormatPodMessage({{"a", Counted({{Reason::kCardCordoned, 2}}, 2)},
                              {"b", NodeStatus::Unusable("node unregistered")},
                              {"c", Counted({{Reason::kCardCordoned, 2}}, 2)}},
                             5),
            "0/5 nodes are available: 1 node unregistered, 2 2/2 CardCordoned.");
}

TEST(FormatPodMessageTest, StatusesThatReadTheSameAreOnePiece) {
  // Preemption could help on one and not the other: the message counts them together.
  NodeStatus unresolvable = Counted({{Reason::kCardInsufficientMemory, 1}}, 1);
  unresolvable.code = NodeStatus::Code::kUnresolvable;
  EXPECT_EQ(
      FormatPodMessage(
          {{"a", Counted({{Reason::kCardInsufficientMemory, 1}}, 1)}, {"b", unresolvable}}, 2),
      "0/2 nodes are available: 2 1/1 CardInsufficientMemory.");
}

TEST(FormatPodMessageTest, SortsByTheWholePieceSoNodeCountsSortByteWise) {
  std::map<std::string, NodeStatus> failed;
  for (int i = 0; i < 10; ++i) failed["b" + std::to_string(i)] = NodeStatus::Unusable("BReason");
  failed["a0"] = NodeStatus::Unusable("AReason");
  failed["a1"] = NodeStatus::Unusable("AReason");
  EXPECT_EQ(FormatPodMessage(failed, 12), "0/12 nodes are available: 10 BReason, 2 AReason.");
}

TEST(FormatNodeStatusesTest, GivesEveryNodeItsText) {
  const std::map<std::string, std::string> texts =
      FormatNodeStatuses({{"a", Counted({{Reason::kCardCordoned, 1}}, 2)},
                          {"b", NodeStatus::Unusable("node unregistered")},
                          {"c", Counted({{Reason::kCardCordoned, 1}}, 2)}});
  EXPECT_EQ(texts,
            (std::map<std::string, std::string>{
                {"a", "1/2 CardCordoned"}, {"b", "node unregistered"}, {"c", "1/2 CardCordoned"}}));
}

}  // namespace
}  // namespace tessera::sched
