#include "sim/replay/trace_replay.h"

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

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

// Rows of a CSV file as column -> value.
std::vector<std::map<std::string, std::string>> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = SplitCsvLine(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = SplitCsvLine(line);
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

// runs.csv carries each seed's allocation at 130% arrived load, so that two policies, which
// replay the same pods per seed, compare seed by seed; its mean is the summary's figure.
TEST(TraceReplay, RunsCsvHoldsEachSeedsAllocationAtTheHighestLoad) {
  const std::string dir = ::testing::TempDir() + "/trace_replay_runs";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // Enough GPUs and small enough pods that every seed has samples near 130% arrived load.
  std::ofstream nodes(dir + "/nodes.csv");
  nodes << "sn,cpu_milli,memory_mib,gpu,model\n";
  for (int i = 0; i < 6; ++i)
    nodes << "n" << i << ",24000,524288,8," << (i % 2 ? "T4" : "P100") << "\n";
  nodes.close();
  std::ofstream pods(dir + "/pods.csv");
  pods << "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";
  for (int i = 0; i < 60; ++i) {
    const int milli = i % 7 == 0 ? 1000 : 100 + 100 * (i % 5);
    pods << "p" << i << "," << 1000 + 500 * (i % 4) << ",4096,1," << milli << "\n";
  }
  pods.close();

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
  for (const auto& row : ReadCsv(options.out_dir + "/summary.csv")) {
    if (row.at("metric") != "gpu_alloc_ratio_pct" || row.at("arrived_pct") != "130") continue;
    const std::string& policy = published.at(row.at("policy"));
    const std::vector<double>& seeds = per_policy.at(policy);
    ASSERT_EQ(seeds.size(), 3U);
    double sum = 0;
    for (double v : seeds) {
      EXPECT_GT(v, 0);
      sum += v;
    }
    EXPECT_NEAR(sum / 3, std::stod(row.at("mean")), 0.01) << policy;
    per_policy.erase(policy);
  }
  EXPECT_TRUE(per_policy.empty()) << "summary.csv lacks a policy's figure at 130%";
}

}  // namespace
}  // namespace tessera::sim::replay
