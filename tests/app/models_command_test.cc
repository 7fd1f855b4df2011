// `tessera models` as a user runs it: a model without verified placements says why and what an
// allowlist entry for it means, and what it says about scenarios is what `simulate` does.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "app/serve_process.h"

namespace tessera::app {
namespace {

using tessera::testing::RunTessera;
using tessera::testing::TempDir;

// The lines of `model`'s entry, its header to the next model's.
std::string Entry(const std::string& text, const std::string& model) {
  size_t at = text.find("\n" + model + "\n");
  if (at == std::string::npos) at = text.find("\n" + model + " (");
  if (at == std::string::npos) return "";
  size_t end = text.find('\n', at + 1);
  while (end != std::string::npos && end + 1 < text.size() && text[end + 1] == ' ') {
    end = text.find('\n', end + 1);
  }
  return text.substr(at + 1, end == std::string::npos ? std::string::npos : end - at);
}

TEST(ModelsCommandTest, AModelWithoutVerifiedPlacementsSaysWhyAndWhatItsAllowlistEntryMeans) {
  std::string out;
  ASSERT_EQ(RunTessera("models", "", &out), 0) << out;
  const std::string rtx5000 = Entry(out, "RTX-PRO-5000-Blackwell-48GB");
  ASSERT_FALSE(rtx5000.empty()) << out;
  EXPECT_NE(rtx5000.find("  why: the built-in table lists the profiles NVIDIA names"),
            std::string::npos)
      << rtx5000;
  EXPECT_NE(rtx5000.find("`nvidia-smi mig -lgipp`"), std::string::npos) << rtx5000;
  EXPECT_NE(rtx5000.find("  so: scenario GPUs of this model"), std::string::npos) << rtx5000;
  EXPECT_NE(rtx5000.find("  on a real node in MIG mode: the agent registers"), std::string::npos)
      << rtx5000;
  EXPECT_NE(rtx5000.find("  an allowlist entry for it (the Helm chart has one)"), std::string::npos)
      << rtx5000;
  EXPECT_NE(rtx5000.find("placements (none verified)"), std::string::npos) << rtx5000;
}

TEST(ModelsCommandTest, WhatItSaysAboutScenariosIsWhatSimulateDoes) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  auto scenario = [&](const std::string& mode) {
    const auto path = dir.path() / (mode + ".yaml");
    std::ofstream(path) << "nodes:\n  - name: n\n    gpus: [{ model: \"RTX PRO 5000 Blackwell\", "
                           "mode: "
                        << mode
                        << " }]\nsteps:\n  - create: { metadata: { name: p }, spec: { "
                           "containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, "
                           "nvidia.com/gpumem: 8000 } } }] } }\n";
    return path.string();
  };
  std::string mig;
  EXPECT_EQ(RunTessera("simulate", scenario("mig"), &mig), 1) << mig;
  EXPECT_NE(mig.find("has no verified MIG placements in the built-in table"), std::string::npos)
      << mig;
  std::string shared;
  EXPECT_EQ(RunTessera("simulate", "--final-only " + scenario("hami-core"), &shared), 0) << shared;
  EXPECT_NE(shared.find("step 1: create default/p: scheduled on n"), std::string::npos) << shared;
}

TEST(ModelsCommandTest, WithADeviceConfigEachModelShowsWhatItsAllowlistEntryAllows) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  // The chart's entries for these two models (deploy/helm/tessera/values.yaml).
  std::ofstream(dir.path() / "device-config.yaml") << R"(nvidia:
  migProfileAllowlist:
    - models: ["RTX PRO 6000 Blackwell"]
      profiles: ["1g.24gb", "2g.48gb", "4g.96gb"]
    - models: ["RTX PRO 5000 Blackwell"]
      profiles: ["1g.24gb", "2g.48gb"]
)";
  std::string out;
  ASSERT_EQ(
      RunTessera("models", "--device-config " + (dir.path() / "device-config.yaml").string(), &out),
      0)
      << out;
  EXPECT_NE(Entry(out, "RTX-PRO-5000-Blackwell-48GB").find("\n  allowlist: 1g.24gb, 2g.48gb\n"),
            std::string::npos)
      << out;
  EXPECT_NE(
      Entry(out, "RTX-PRO-6000-Blackwell-96GB").find("\n  allowlist: 1g.24gb, 2g.48gb, 4g.96gb\n"),
      std::string::npos)
      << out;
  EXPECT_NE(Entry(out, "A100-80GB").find("\n  allowlist: (no entry: no profile in MIG mode)\n"),
            std::string::npos)
      << out;

  std::string missing;
  EXPECT_EQ(RunTessera("models", "--device-config /nonexistent/device-config.yaml", &missing), 1);
  EXPECT_NE(missing.find("/nonexistent/device-config.yaml"), std::string::npos) << missing;
}

}  // namespace
}  // namespace tessera::app
