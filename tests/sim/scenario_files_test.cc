// Runs every tests/scenarios/*.yaml through the simulator and compares the JSON Lines output
// with the reviewed expectation next to it (<name>.expected.jsonl). To record a new scenario's
// expectation, run with TESSERA_UPDATE_GOLDEN=1 and review the diff before committing it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/mig/catalog.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace tessera::sim {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> ScenarioFiles() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(fs::path(TESSERA_SOURCE_DIR) / "tests/scenarios")) {
    if (e.path().extension() == ".yaml") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string RunToJsonLines(const std::string& path) {
  auto catalog = mig::GpuModelCatalog::Builtin();
  EXPECT_TRUE(catalog.ok());
  auto scenario = LoadScenarioFile(path, catalog.value());
  if (!scenario.ok()) return "LOAD ERROR: " + scenario.error().message + "\n";
  Simulator sim(std::move(scenario.value()));
  std::string out;
  for (const auto& r : sim.RunAll()) out += StepJson(r) + "\n";
  out += FinalJson(sim.state()) + "\n";
  return out;
}

class ScenarioFileTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ScenarioFileTest, OutputMatchesReviewedExpectation) {
  const fs::path dir = fs::path(TESSERA_SOURCE_DIR) / "tests/scenarios";
  const fs::path yaml = dir / (GetParam() + ".yaml");
  const fs::path expected_path = dir / (GetParam() + ".expected.jsonl");
  const std::string actual = RunToJsonLines(yaml.string());
  if (std::getenv("TESSERA_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(expected_path) << actual;
    GTEST_SKIP() << "recorded " << expected_path;
  }
  std::ifstream in(expected_path);
  ASSERT_TRUE(in) << "missing " << expected_path << " (record it with TESSERA_UPDATE_GOLDEN=1)";
  std::stringstream expected;
  expected << in.rdbuf();
  // Compare line by line so that a failure points at the step that changed.
  std::istringstream a(actual);
  std::istringstream e(expected.str());
  std::string al;
  std::string el;
  int line = 0;
  while (true) {
    bool more_a = static_cast<bool>(std::getline(a, al));
    bool more_e = static_cast<bool>(std::getline(e, el));
    ++line;
    if (!more_a && !more_e) break;
    ASSERT_EQ(more_a, more_e) << "line count differs at line " << line;
    ASSERT_EQ(al, el) << GetParam() << " line " << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ScenarioFileTest, ::testing::ValuesIn(ScenarioFiles()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace tessera::sim
