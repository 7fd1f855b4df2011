#include "sim/replay/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace tessera::sim::replay {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

SeedResult FakeRun(uint64_t seed, double alloc_at_100, double alloc_at_130) {
  SeedResult run;
  run.seed = seed;
  run.policy = "bestfit";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  run.series.gpu_alloc_pct.assign(131, nan);
  run.series.frag_amount_pct.assign(131, nan);
  run.series.frag_ratio_pct.assign(131, nan);
  run.series.gpu_alloc_pct[0] = 0.25;
  run.series.gpu_alloc_pct[100] = alloc_at_100;
  run.series.gpu_alloc_pct[130] = alloc_at_130;
  run.series.frag_amount_pct[0] = 14;
  run.series.frag_ratio_pct[0] = 14.1;
  run.failed_by_kind = {0, 10, 20, 1};
  run.pods = 100;
  run.scheduled = 69;
  return run;
}

TEST(Labels, PublishedNamesAndWorkloads) {
  EXPECT_EQ(PublishedPolicyLabel("bestfit"), "05-BestFit");
  EXPECT_EQ(PublishedPolicyLabel("fgd"), "06-FGD");
  EXPECT_EQ(PublishedPolicyLabel("random"), "01-Random");
  EXPECT_EQ(PublishedPolicyLabel("tessera"), "tessera");
  EXPECT_EQ(WorkloadName("/a/b/openb_pod_list_default.csv"), "openb_pod_list_default");
  EXPECT_EQ(WorkloadName("pods"), "pods");
}

TEST(Summarize, MeanAndSampleStdPerPoint) {
  std::vector<SeedResult> runs = {FakeRun(42, 92, 93), FakeRun(43, 94, 95)};
  std::vector<SummaryRow> rows = Summarize("w", "05-BestFit", runs);
  const SummaryRow* at130 = FindSummaryRow(rows, "w", "05-BestFit", kMetricAllocation, 130);
  ASSERT_NE(at130, nullptr);
  EXPECT_DOUBLE_EQ(at130->mean, 94);
  EXPECT_DOUBLE_EQ(at130->std, std::sqrt(2.0));
  EXPECT_EQ(at130->n_seeds, 2);
  EXPECT_EQ(FindSummaryRow(rows, "w", "05-BestFit", kMetricAllocation, 50), nullptr);  // NaN
  EXPECT_NE(FindSummaryRow(rows, "w", "05-BestFit", kMetricFragRatio, 0), nullptr);
  const std::string csv = SummaryCsv(rows);
  EXPECT_THAT(csv, HasSubstr("workload,policy,metric,arrived_pct,mean,std,n_seeds\n"));
  EXPECT_THAT(csv, HasSubstr("w,05-BestFit,gpu_alloc_ratio_pct,130,94.000,1.414,2\n"));
  EXPECT_THAT(csv, HasSubstr("w,05-BestFit,frag_amount_pct_of_capacity,0,14.000,0.000,2\n"));
}

TEST(SummaryCsv, RoundTripsAndReportsErrors) {
  std::vector<SeedResult> runs = {FakeRun(42, 92, 93), FakeRun(43, 94, 95)};
  std::vector<SummaryRow> rows = Summarize("w", "05-BestFit", runs);
  auto parsed = ParseSummaryCsv(SummaryCsv(rows), "summary.csv");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->size(), rows.size());
  EXPECT_EQ((*parsed)[0].metric, rows[0].metric);
  EXPECT_NEAR((*parsed)[1].mean, rows[1].mean, 1e-3);

  auto published = ParseSummaryCsv(
      "workload,policy,metric,arrived_pct,mean,std,n_seeds\r\n"
      "openb_pod_list_default,05-BestFit,gpu_alloc_ratio_pct,130,93.08,0.13,10\r\n",
      "pub.csv");
  ASSERT_TRUE(published.ok());
  EXPECT_DOUBLE_EQ((*published)[0].mean, 93.08);

  const std::string header = "workload,policy,metric,arrived_pct,mean,std,n_seeds\n";
  const std::vector<std::pair<std::string, std::string>> errors = {
      {header + "w,p,m,5,x,1,2\n", "summary.csv:2: column 'mean'"},
      {header + "w,p,m,5\n", "summary.csv:2"},  // a short row
      {header + "w,p,m,,1,1,2\n", "summary.csv:2: column 'arrived_pct'"},
      {"workload,policy\n", "no column 'metric'"},
  };
  for (const auto& [text, message] : errors) {
    auto refused = ParseSummaryCsv(text, "summary.csv");
    ASSERT_FALSE(refused.ok()) << text;
    EXPECT_THAT(refused.error().message, HasSubstr(message));
  }
  EXPECT_FALSE(LoadSummaryCsv("/nonexistent/summary.csv").ok());
}

TEST(RenderHtmlReport, ChartsTablesAndPublishedCurves) {
  HtmlReportInput input;
  input.title = "Replay <default>";
  input.workload = "w";
  input.policies = {{"bestfit", {FakeRun(42, 92, 93), FakeRun(43, 94, 95)}}};
  std::string without = RenderHtmlReport(input);
  EXPECT_THAT(without, HasSubstr("<svg"));
  EXPECT_THAT(without, HasSubstr("Replay &lt;default&gt;"));
  EXPECT_THAT(without, Not(HasSubstr("stroke-dasharray")));
  EXPECT_THAT(without, HasSubstr("94.00 &plusmn; 1.41"));
  EXPECT_THAT(without, HasSubstr("sharing"));

  input.published = {{"w", "05-BestFit", "gpu_alloc_ratio_pct", 0, 0.25, 0.01, 10},
                     {"w", "05-BestFit", "gpu_alloc_ratio_pct", 130, 93.08, 0.13, 10}};
  std::string with = RenderHtmlReport(input);
  EXPECT_THAT(with, HasSubstr("stroke-dasharray"));
  EXPECT_THAT(with, HasSubstr("93.08 &plusmn; 0.13"));
  EXPECT_THAT(with, HasSubstr("+0.92"));
}

}  // namespace
}  // namespace tessera::sim::replay
