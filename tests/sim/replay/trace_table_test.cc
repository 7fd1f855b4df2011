#include "sim/replay/trace_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/replay/trace.h"

namespace tessera::sim::replay {
namespace {

using ::testing::HasSubstr;

TEST(TraceTable, ShowsTheHeadroomFromTesseraToTheBoundAndTheDeltaToFgd) {
  TraceRow row;
  row.workload = "openb_pod_list_default";
  row.policies = {{"fgd", 95.37, 0.11}, {"tessera", 95.45, 0.12}};
  row.published_fgd = Figure{"06-FGD", 95.39, 0.08};
  row.offline_packing = Figure{std::string(kOfflinePackingLabel), 96.5, 0.1};
  row.bound = Figure{std::string(kUpperBoundLabel), 99.89, 0.01};
  TraceRow other = row;
  other.workload = "openb_pod_list_gpushare80";
  other.policies = {{"fgd", 89.35, 0.14}, {"tessera", 89.33, 0.04}};
  other.published_fgd = Figure{"06-FGD", 89.31, 0.12};
  other.bound = Figure{std::string(kUpperBoundLabel), 94.53, 0.05};
  const std::string table = TraceTableMarkdown({row, other});
  EXPECT_THAT(table, HasSubstr("| trace | fgd | tessera | FGD (published) | tessera − FGD |"));
  EXPECT_THAT(table, HasSubstr("| openb_pod_list_default | 95.37 ± 0.11 | 95.45 ± 0.12 | "
                               "95.39 ± 0.08 | +0.06 | 96.50 ± 0.10 | 99.89 ± 0.01 | 4.44 |"));
  EXPECT_THAT(table, HasSubstr("| openb_pod_list_gpushare80 |"));
  EXPECT_THAT(table, HasSubstr("| +0.02 |"));
  EXPECT_THAT(table, HasSubstr("| 5.20 |"));
  // Means over the traces: tessera (95.45 + 89.33) / 2, headroom (4.44 + 5.20) / 2.
  EXPECT_THAT(table, HasSubstr("| mean | 92.36 | 92.39 | 92.35 | 0.04 | 96.50 | 97.21 | 4.82 |"));
  const std::string csv = TraceTableCsv({row});
  EXPECT_THAT(csv, HasSubstr("openb_pod_list_default,tessera,95.450,0.120\n"));
  EXPECT_THAT(csv, HasSubstr("openb_pod_list_default,upper-bound,99.890,0.010\n"));
}

// When a row has tessera − fgd seed by seed, the table gets that column, after the comparison
// with the published means; a row without it leaves the cell empty.
TEST(TraceTable, ShowsTheSeedBySeedDifferenceWhenARowHasIt) {
  TraceRow row;
  row.workload = "mg40";
  row.policies = {{"fgd", 96.97, 0.09}, {"tessera", 96.87, 0.10}};
  row.tessera_minus_fgd = PairedDifference{-0.092, 0.030, 20};
  TraceRow other;
  other.workload = "default";
  other.policies = {{"fgd", 95.39, 0.12}, {"tessera", 95.44, 0.10}};
  const std::string table = TraceTableMarkdown({row, other});
  EXPECT_THAT(table,
              HasSubstr("| tessera − FGD | tessera − fgd, seed by seed | offline packing |"));
  EXPECT_THAT(table, HasSubstr("| mg40 | 96.97 ± 0.09 | 96.87 ± 0.10 | | | -0.09 ± 0.03 | | | |"));
  EXPECT_THAT(table, HasSubstr("| default | 95.39 ± 0.12 | 95.44 ± 0.10 | | | | | | |"));
  EXPECT_THAT(table, HasSubstr("| mean | 96.18 | 96.16 | | | -0.09 | | | |"));
  EXPECT_THAT(TraceTableCsv({row}), HasSubstr("mg40,paired:tessera-fgd,-0.092,0.030\n"));
  // Without any such row, no such column.
  EXPECT_THAT(TraceTableMarkdown({other}), ::testing::Not(HasSubstr("seed by seed")));
}

TEST(TraceTable, WithoutTesseraTheHeadroomIsFromTheBestPolicy) {
  TraceRow row;
  row.workload = "w";
  row.policies = {{"bestfit", 93.0, 0}, {"fgd", 95.0, 0}};
  row.bound = Figure{std::string(kUpperBoundLabel), 99.0, 0};
  EXPECT_THAT(TraceTableMarkdown({row}), HasSubstr("best − FGD"));
  EXPECT_THAT(TraceTableMarkdown({row}), HasSubstr("| 99.00 ± 0.00 | 4.00 |"));
}

TEST(TraceTable, SummarizesTheBoundsOverSeeds) {
  std::vector<AllocationBound> bounds(2);
  bounds[0].gpu_alloc_pct = 99.0;
  bounds[1].gpu_alloc_pct = 98.0;
  bounds[0].offline_packing_pct = 96.0;
  bounds[1].offline_packing_pct = 97.0;
  const auto rows = SummarizeBounds("w", bounds);
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[0].policy, kUpperBoundLabel);
  EXPECT_DOUBLE_EQ(rows[0].mean, 98.5);
  EXPECT_EQ(rows[0].arrived_pct, 130);
  EXPECT_EQ(rows[1].policy, kOfflinePackingLabel);
  EXPECT_DOUBLE_EQ(rows[1].mean, 96.5);
  EXPECT_THAT(BoundsCsv("w", {42, 43}, bounds), HasSubstr("w,43,98.000,97.000,"));
  // With another --tune the stream, and so the bound, ends elsewhere.
  EXPECT_EQ(SummarizeBounds("w", bounds, 100)[0].arrived_pct, 100);
}

TEST(ExpandPodLists, AFolderStandsForItsPodListsInNameOrder) {
  const auto dir = std::filesystem::temp_directory_path() / "tessera-expand-pod-lists";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const char* name :
       {"openb_pod_list_b.csv", "openb_pod_list_a.csv", "openb_node_list.csv", "notes.txt"}) {
    std::ofstream(dir / name) << "x\n";
  }
  auto lists = ExpandPodLists({dir.string(), "/elsewhere/one.csv"});
  ASSERT_TRUE(lists.ok()) << lists.error().message;
  ASSERT_EQ(lists->size(), 3U);
  EXPECT_EQ((*lists)[0], (dir / "openb_pod_list_a.csv").string());
  EXPECT_EQ((*lists)[1], (dir / "openb_pod_list_b.csv").string());
  EXPECT_EQ((*lists)[2], "/elsewhere/one.csv");

  const auto empty = dir / "empty";
  std::filesystem::create_directories(empty);
  auto none = ExpandPodLists({empty.string()});
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.error().message, HasSubstr("no *pod_list*.csv"));
  EXPECT_THAT(none.error().message, HasSubstr(empty.string()));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera::sim::replay
