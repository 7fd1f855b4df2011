#include "core/sched/reasons.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace tessera::sched {
namespace {

// --- FormatNodeReason (HAMi's GenReason) ----------------------------------------------------

TEST(FormatNodeReasonTest, WritesCountOverTotalAndTheReason) {
  EXPECT_EQ(FormatNodeReason({{"CardCordoned", 2}}, 2), "2/2 CardCordoned");
}

TEST(FormatNodeReasonTest, SortsPiecesByteWiseAndJoinsWithCommaSpace) {
  EXPECT_EQ(FormatNodeReason({{"NumaNotFit", 1}, {"AllocatedCardsInsufficientRequest", 1}}, 2),
            "1/2 AllocatedCardsInsufficientRequest, 1/2 NumaNotFit");
}

TEST(FormatNodeReasonTest, SortsByTheWholePieceSoCountsComeFirst) {
  // "10/12 ..." sorts before "2/12 ..." byte-wise, as Go's sort.Strings does.
  EXPECT_EQ(FormatNodeReason({{"CardInsufficientMemory", 2}, {"CardNotHealth", 10}}, 12),
            "10/12 CardNotHealth, 2/12 CardInsufficientMemory");
  EXPECT_EQ(FormatNodeReason({{"CardNotHealth", 1}, {"CardInsufficientMemory", 3}}, 4),
            "1/4 CardNotHealth, 3/4 CardInsufficientMemory");
}

TEST(FormatNodeReasonTest, UsesTheExactHamiReasonStrings) {
  ReasonCounts counts;
  counts[std::string(reason::kCardUuidMismatch)] = 1;
  counts[std::string(reason::kCardTimeSlicingExhausted)] = 1;
  counts[std::string(reason::kExclusiveDeviceAllocateConflict)] = 1;
  EXPECT_EQ(FormatNodeReason(counts, 3),
            "1/3 CardTimeSlicingExhausted, 1/3 CardUuidMismatch, 1/3 "
            "ExclusiveDeviceAllocateConflict");
}

TEST(FormatNodeReasonTest, SkipsReasonsWithoutCount) {
  EXPECT_EQ(FormatNodeReason({{"NumaNotFit", 0}, {"CardNotHealth", 1}}, 1), "1/1 CardNotHealth");
}

TEST(FormatNodeReasonTest, NoReasonsIsEmptyText) { EXPECT_EQ(FormatNodeReason({}, 4), ""); }

// --- FormatPodMessage (kube-scheduler's FitError) ---------------------------------------------

TEST(FormatPodMessageTest, CountsNodesPerReasonAndSortsThePieces) {
  EXPECT_EQ(FormatPodMessage({{"node1", "1/1 CardInsufficientMemory"},
                              {"node2", std::string(reason::kNodeInsufficientDevice)}},
                             2),
            "0/2 nodes are available: 1 1/1 CardInsufficientMemory, 1 NodeInsufficientDevice.");
}

TEST(FormatPodMessageTest, NodesWithTheSameReasonAreCountedTogether) {
  EXPECT_EQ(
      FormatPodMessage(
          {{"a", "2/2 CardCordoned"}, {"b", "node unregistered"}, {"c", "2/2 CardCordoned"}}, 5),
      "0/5 nodes are available: 1 node unregistered, 2 2/2 CardCordoned.");
}

TEST(FormatPodMessageTest, SortsByTheWholePieceSoNodeCountsSortByteWise) {
  std::map<std::string, std::string> failed;
  for (int i = 0; i < 10; ++i) failed["b" + std::to_string(i)] = "BReason";
  failed["a0"] = "AReason";
  failed["a1"] = "AReason";
  EXPECT_EQ(FormatPodMessage(failed, 12), "0/12 nodes are available: 10 BReason, 2 AReason.");
}

}  // namespace
}  // namespace tessera::sched
