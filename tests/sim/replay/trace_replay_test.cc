#include "sim/replay/trace_replay.h"

#include "sim/replay/csv_table.h"
#include "sim/replay/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::sim::replay {
namespace {

// Rows of a CSV file the replay wrote, as column -> value.
std::vector<std::map<std::string, std::string>> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  Result<CsvTable> table = ParseCsv(text.str(), path);
  EXPECT_TRUE(table.ok()) << table.error().message;
  std::vector<std::map<std::string, std::string>> rows;
  if (!table.ok()) return rows;
  for (const auto& [line, fields] : table->rows) {
    std::map<std::string, std::string>& row = rows.emplace_back();
    for (size_t i = 0; i < fields.size(); ++i) row[table->header[i]] = fields[i];
  }
  return rows;
}

// A node list nodes.csv and a pod list `pods` under `dir`, with enough GPUs and small enough
// pods that every seed has samples near 130% arrived load; `variant` shifts the pods' sizes.
void WriteTrace(const std::string& dir, const std::string& pods_file, int variant) {
  std::ofstream nodes(dir + "/nodes.csv");
  nodes << "sn,cpu_milli,memory_mib,gpu,model\n";
  for (int i = 0; i < 6; ++i) {
    nodes << "n" << i << ",24000,524288,8," << (i % 2 ? "T4" : "P100") << "\n";
  }
  std::ofstream pods(dir + "/" + pods_file);
  pods << "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";
  for (int i = 0; i < 60; ++i) {
    const int milli = (i + variant) % 7 == 0 ? 1000 : 100 + 100 * ((i + variant) % 5);
    pods << "p" << i << "," << 1000 + 500 * (i % 4) << ",4096,1," << milli << "\n";
  }
}

// runs.csv carries each seed's allocation at 130% arrived load, so that two policies, which
// replay the same pods per seed, compare seed by seed; its mean is the summary's figure.
TEST(TraceReplay, RunsCsvHoldsEachSeedsAllocationAtTheHighestLoad) {
  const std::string dir = ::testing::TempDir() + "/trace_replay_runs";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  WriteTrace(dir, "pods.csv", 0);
  TraceReplayOptions options;
  options.nodes_csv = dir + "/nodes.csv";
  options.pods_csv = {dir + "/pods.csv"};
  options.policies = {"fgd", "bestfit"};
  options.seeds = {1, 2, 3};
  options.skip_bound = true;
  options.out_dir = dir + "/out";
  ASSERT_TRUE(ReplayTraces(options).ok());

  std::map<std::string, std::vector<double>> per_policy;
  for (const auto& row : ReadCsv(options.out_dir + "/runs.csv")) {
    ASSERT_TRUE(row.count("gpu_alloc_pct_at_130")) << "runs.csv has no gpu_alloc_pct_at_130";
    const std::string& value = row.at("gpu_alloc_pct_at_130");
    ASSERT_FALSE(value.empty()) << row.at("policy") << " seed " << row.at("seed");
    per_policy[row.at("policy")].push_back(std::stod(value));
  }
  ASSERT_EQ(per_policy.size(), 2U);
  // summary.csv names the policies as the published summary does.
  const std::map<std::string, std::string> published = {{"06-FGD", "fgd"},
                                                        {"05-BestFit", "bestfit"}};
  Result<std::vector<SummaryRow>> summary = LoadSummaryCsv(options.out_dir + "/summary.csv");
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  for (const SummaryRow& row : summary.value()) {
    if (row.metric != kMetricAllocation || row.arrived_pct != 130) continue;
    const std::string& policy = published.at(row.policy);
    const std::vector<double>& seeds = per_policy.at(policy);
    ASSERT_EQ(seeds.size(), 3U);
    double sum = 0;
    for (double v : seeds) {
      EXPECT_GT(v, 0);
      sum += v;
    }
    EXPECT_NEAR(sum / 3, row.mean, 0.01) << policy;
    per_policy.erase(policy);
  }
  EXPECT_TRUE(per_policy.empty()) << "summary.csv lacks a policy's figure at 130%";
}

// With tessera and fgd both replayed, the cross-trace table gives tessera − fgd seed by seed
// (the mean of the per-seed differences in runs.csv, with a 95% interval) next to the
// comparison with the published means.
TEST(TraceReplay, TheTraceTableComparesTesseraWithFgdSeedBySeed) {
  const std::string dir = ::testing::TempDir() + "/trace_replay_paired";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  WriteTrace(dir, "a_pod_list.csv", 0);
  WriteTrace(dir, "b_pod_list.csv", 3);

  TraceReplayOptions options;
  options.nodes_csv = dir + "/nodes.csv";
  options.pods_csv = {dir + "/a_pod_list.csv", dir + "/b_pod_list.csv"};
  options.policies = {"fgd", "tessera"};
  options.seeds = {1, 2, 3, 4};
  options.skip_bound = true;
  options.out_dir = dir + "/out";
  ASSERT_TRUE(ReplayTraces(options).ok());

  std::map<std::string, double> paired;
  for (const auto& row : ReadCsv(options.out_dir + "/traces.csv")) {
    if (row.at("column") == "paired:tessera-fgd")
      paired[row.at("workload")] = std::stod(row.at("mean"));
  }
  ASSERT_EQ(paired.size(), 2U);
  for (const auto& [workload, mean] : paired) {
    std::map<std::string, std::map<std::string, double>> by_seed;  // seed -> policy -> value
    for (const auto& row : ReadCsv(options.out_dir + "/" + workload + "/runs.csv")) {
      by_seed[row.at("seed")][row.at("policy")] = std::stod(row.at("gpu_alloc_pct_at_130"));
    }
    ASSERT_EQ(by_seed.size(), 4U);
    double sum = 0;
    for (auto& [seed, values] : by_seed) sum += values.at("tessera") - values.at("fgd");
    EXPECT_NEAR(mean, sum / 4, 0.01) << workload;  // runs.csv rounds to 2 decimals
  }
  std::ifstream markdown(options.out_dir + "/traces.md");
  std::stringstream text;
  text << markdown.rdbuf();
  EXPECT_NE(text.str().find("| tessera − fgd, seed by seed |"), std::string::npos) << text.str();
}

}  // namespace
}  // namespace tessera::sim::replay
