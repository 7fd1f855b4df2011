#include "sim/mig_replay/headline.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/mig_replay/geometry_free.h"
#include "sim/mig_replay/offline_guided.h"
#include "sim/mig_replay/upper_bound.h"

namespace tessera::sim::mig_replay {
namespace {

// A run of one cell: demand served `served` %, and per request type (arrived, accepted).
RunRecord MakeRun(const std::string& policy, uint64_t seed, double served,
                  std::vector<std::pair<int64_t, int64_t>> types = {{10, 10}},
                  const std::string& protocol = "steady-0.9") {
  RunRecord r;
  r.fleet = "a100-40gb";
  r.workload = "multi-small";
  r.protocol = protocol;
  r.policy = policy;
  r.seed = seed;
  r.metrics.served_ratio = served / 100;
  for (size_t t = 0; t < types.size(); ++t) {
    r.type_labels.push_back("type " + std::to_string(t));
    for (int64_t i = 0; i < types[t].first; ++i) r.metrics.CountArrived(static_cast<int>(t));
    for (int64_t i = 0; i < types[t].second; ++i) {
      r.metrics.CountAccepted(static_cast<int>(t));
      r.metrics.CountEverPlaced(static_cast<int>(t));
    }
  }
  return r;
}

TEST(MigHeadline, BehindOnlyWhenTheWholeSeedIntervalIsBelowZero) {
  std::vector<RunRecord> records;
  // hami-master serves 2 points more on every seed (tessera behind beyond the noise); first-fit
  // more on average, but the seeds disagree (within the noise).
  const double tessera[] = {60, 62, 61, 63};
  const double master[] = {62, 64, 63, 65};
  const double first_fit[] = {70, 55, 68, 58};
  for (uint64_t s = 0; s < 4; ++s) {
    records.push_back(MakeRun("tessera", s, tessera[s]));
    records.push_back(MakeRun("hami-master", s, master[s]));
    records.push_back(MakeRun("first-fit", s, first_fit[s]));
  }
  const auto rows = BuildHeadline(records, "tessera", {"hami-2.10", "hami-master", "first-fit"});
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_EQ(rows[0].versus.size(), 2u);  // hami-2.10 did not run
  EXPECT_EQ(rows[0].versus[0].policy, "hami-master");
  EXPECT_NEAR(rows[0].versus[0].served_diff.mean, -2, 1e-9);
  EXPECT_TRUE(rows[0].versus[0].behind());
  EXPECT_EQ(rows[0].versus[1].policy, "first-fit");
  EXPECT_LT(rows[0].versus[1].served_diff.mean, 0);
  EXPECT_FALSE(rows[0].versus[1].behind());
  EXPECT_EQ(rows[0].best_baseline, "hami-master");  // 63.5 on average, first-fit 62.75
}

TEST(MigHeadline, BestBaselineBoundHeadroomAndGapClosed) {
  std::vector<RunRecord> records;
  for (uint64_t s = 0; s < 3; ++s) {
    records.push_back(MakeRun("tessera", s, 70));
    records.push_back(MakeRun("hami-2.10", s, 50));
    records.push_back(MakeRun("best-fit", s, 60));  // not featured, still the best baseline
    records.push_back(MakeRun(std::string(kReferencePooledSlices), s, 95));  // never "best"
    records.push_back(MakeRun(std::string(kUpperBound), s, 90));
    records.push_back(MakeRun("placement-bound", s, 80));  // the tighter bound wins
  }
  const auto rows = BuildHeadline(records, "tessera", FeaturedBaselines());
  ASSERT_EQ(rows.size(), 1u);
  const HeadlineRow& r = rows[0];
  EXPECT_EQ(r.best_baseline, "best-fit");
  EXPECT_NEAR(r.versus_best.mean, 10, 1e-9);
  EXPECT_NEAR(r.bound, 80, 1e-9);
  EXPECT_NEAR(r.headroom, 10, 1e-9);
  EXPECT_NEAR(r.gap_closed, 50, 1e-9);  // (70 - 60) / (80 - 60)
}

// offline-lp-guided is no baseline even when it serves the most; it gives the headroom's lower
// end, printed as "a..b".
TEST(MigHeadline, AnOfflineScheduleBracketsTheHeadroomFromBelow) {
  std::vector<RunRecord> records;
  for (uint64_t s = 0; s < 3; ++s) {
    records.push_back(MakeRun("tessera", s, 70));
    records.push_back(MakeRun("first-fit", s, 60));
    records.push_back(MakeRun(std::string(kOfflineLpGuided), s, 76));
    records.push_back(MakeRun("placement-bound", s, 80));
  }
  auto rows = BuildHeadline(records, "tessera", FeaturedBaselines());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].best_baseline, "first-fit");
  EXPECT_NEAR(rows[0].offline, 76, 1e-9);
  EXPECT_NEAR(rows[0].headroom_floor, 6, 1e-9);
  EXPECT_NEAR(rows[0].headroom, 10, 1e-9);
  EXPECT_NE(HeadlineText(rows).find("6.0..10.0"), std::string::npos) << HeadlineText(rows);

  records.erase(records.begin() + 2);  // one seed without it: the others still count
  for (RunRecord& r : records) {
    if (r.policy == kOfflineLpGuided) r.metrics.served_ratio = 0.65;  // never below tessera
  }
  rows = BuildHeadline(records, "tessera", FeaturedBaselines());
  EXPECT_NEAR(rows[0].headroom_floor, 0, 1e-9);
}

TEST(MigHeadline, StarvationComparesEachTypeWithTheBestBaseline) {
  std::vector<RunRecord> records;
  // Type 1 (large): tessera places 2 of 10, the best baseline 5 of 10: 30 points more starved,
  // though tessera serves more demand overall.
  for (uint64_t s = 0; s < 2; ++s) {
    records.push_back(MakeRun("tessera", s, 70, {{10, 10}, {10, 2}}));
    records.push_back(MakeRun("hami-master", s, 65, {{10, 8}, {10, 5}}));
  }
  const auto rows = BuildHeadline(records, "tessera", FeaturedBaselines());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NEAR(rows[0].worst_never_placed, 80, 1e-9);
  EXPECT_NEAR(rows[0].starvation_excess, 30, 1e-9);
  EXPECT_EQ(rows[0].starved_type, "type 1");
  EXPECT_NEAR(rows[0].starved_diff.mean, 30, 1e-9);
  EXPECT_TRUE(rows[0].starved_beyond_noise);  // the same on both seeds
  EXPECT_TRUE(std::isnan(rows[0].bound));
  const std::string text = HeadlineText(rows);
  EXPECT_NE(text.find("a100-40gb"), std::string::npos);
  EXPECT_NE(text.find("80.0 (type 1 +30.0±0.0 MORE)"), std::string::npos) << text;
  const std::string md = HeadlineMarkdown(rows);
  EXPECT_NE(md.find("| a100-40gb | multi-small | 70.0 |"), std::string::npos) << md;
}

// Starvation is judged as demand is: a type more starved on average whose seeds disagree is
// within the noise; the type named is the one whose interval starts highest.
TEST(MigHeadline, StarvationBeyondTheSeedsNoiseOnly) {
  std::vector<RunRecord> records;
  // Type 0: +30, -10, +40 points (mean +20, seeds disagree); type 1: +5, +4, +6 (mean +5).
  const int64_t mine0[] = {2, 6, 1};
  const int64_t theirs0[] = {5, 5, 5};
  const int64_t mine1[] = {15, 16, 14};
  for (uint64_t s = 0; s < 3; ++s) {
    records.push_back(MakeRun("tessera", s, 70, {{10, mine0[s]}, {100, 100 - mine1[s]}}));
    records.push_back(MakeRun("best-fit", s, 65, {{10, theirs0[s]}, {100, 90}}));
  }
  auto rows = BuildHeadline(records, "tessera", FeaturedBaselines());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NEAR(rows[0].starvation_excess, 20, 1e-9);  // pooled: type 0
  EXPECT_EQ(rows[0].starved_type, "type 1");
  EXPECT_NEAR(rows[0].starved_diff.mean, 5, 1e-9);
  EXPECT_TRUE(rows[0].starved_beyond_noise);

  records.clear();  // type 1 alone also disagrees now: nothing beyond the noise
  const int64_t noisy1[] = {15, 5, 14};
  for (uint64_t s = 0; s < 3; ++s) {
    records.push_back(MakeRun("tessera", s, 70, {{10, mine0[s]}, {100, 100 - noisy1[s]}}));
    records.push_back(MakeRun("best-fit", s, 65, {{10, theirs0[s]}, {100, 90}}));
  }
  rows = BuildHeadline(records, "tessera", FeaturedBaselines());
  EXPECT_FALSE(rows[0].starved_beyond_noise);
  EXPECT_EQ(HeadlineText(rows).find(" MORE)"), std::string::npos) << HeadlineText(rows);
}

TEST(MigHeadline, PendingQueueCountsPodsEverPlaced) {
  RunRecord r = MakeRun("tessera", 1, 50, {{10, 4}}, "pending-1.2");
  r.metrics.accepted = 0;  // none on arrival; 4 of 10 after waiting
  r.metrics.by_type[0].accepted = 0;
  for (double wait : {0.1, 0.2, 0.3, 0.4, 2.5}) r.metrics.CountWait(0, wait);
  const auto rows = BuildHeadline({r}, "tessera", FeaturedBaselines());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NEAR(rows[0].placed, 40, 1e-9);
  EXPECT_NEAR(rows[0].worst_never_placed, 60, 1e-9);
  EXPECT_NEAR(rows[0].worst_wait_p95, 2.5, 1e-6);  // nearest rank: the largest of five
}

}  // namespace
}  // namespace tessera::sim::mig_replay
