// `tessera simulate` as a user runs it: --final-only (and its alias --quiet), pod letters that
// hold across steps, GPU ids that stay distinct on screen.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "app/serve_process.h"

namespace tessera::app {
namespace {

using tessera::testing::RunTessera;
using tessera::testing::TempDir;

std::string Demo() { return std::string(TESSERA_SOURCE_DIR) + "/examples/demo-mig.yaml"; }

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(SimulateCommandTest, FinalOnlyPrintsTheDecisionsAndTheFinalState) {
  std::string out;
  ASSERT_EQ(RunTessera("simulate", "--final-only " + Demo(), &out), 0) << out;
  EXPECT_EQ(out.find("initial state"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "slices |"), 1U) << "one map, the final one:\n" << out;
  for (const char* decision :
       {"step 1: create default/p1: scheduled on node-a", "step 3: create default/p3: PENDING",
        "step 4: delete default/p1: released", "step 4: retry default/p3: scheduled on node-a"}) {
    EXPECT_NE(out.find(decision), std::string::npos) << decision << "\n" << out;
  }
  const size_t final_state = out.find("final state\n  node node-a\n");
  ASSERT_NE(final_state, std::string::npos) << out;
  EXPECT_LT(out.find("step 4: retry"), final_state);
  EXPECT_NE(out.find("slices |AAAAAA...BBB|  72576/97887 MiB, 75% cores", final_state),
            std::string::npos)
      << out;

  std::string quiet;
  ASSERT_EQ(RunTessera("simulate", "--quiet " + Demo(), &quiet), 0) << quiet;
  EXPECT_EQ(quiet, out);
}

TEST(SimulateCommandTest, APodKeepsItsLetterInEveryMap) {
  std::string out;
  ASSERT_EQ(RunTessera("simulate", Demo(), &out), 0) << out;
  // default/p2 is B next to p1, and still B after p1 is deleted and p3 placed.
  EXPECT_EQ(Count(out, "B = default/p2"), 3U) << out;
  EXPECT_EQ(out.find("A = default/p2"), std::string::npos) << out;
  EXPECT_NE(out.find("slices |BBBBBB...CCC|"), std::string::npos) << out;
  EXPECT_NE(out.find("C = default/p3: 1g.24gb@9+3"), std::string::npos) << out;
}

TEST(SimulateCommandTest, GpuIdsSharingAPrefixArePrintedApart) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  std::ofstream(dir.path() / "two.yaml") << R"(
nodes:
  - name: node-a
    gpus:
      - { model: "A100-SXM4-40GB", mode: mig, uuid: GPU-5a1d2c3e-0000-1111-2222-333333333301 }
      - { model: "A100-SXM4-40GB", mode: mig, uuid: GPU-5a1d2c3e-0000-1111-2222-333333333302 }
steps:
  - create: { metadata: { name: p, annotations: { nvidia.com/vgpu-mode: mig } }, spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 2, nvidia.com/gpumem: 19000 } } }] } }
)";
  std::string out;
  ASSERT_EQ(RunTessera("simulate", "-q " + (dir.path() / "two.yaml").string(), &out), 0) << out;
  // The ids differ only in their last character: both are printed in full, never as the
  // ambiguous "GPU-5a1d2c3e…".
  EXPECT_EQ(out.find("GPU-5a1d2c3e…"), std::string::npos) << out;
  EXPECT_NE(out.find("GPU 0 GPU-5a1d2c3e-0000-1111-2222-333333333301 "), std::string::npos) << out;
  EXPECT_NE(out.find("GPU 1 GPU-5a1d2c3e-0000-1111-2222-333333333302 "), std::string::npos) << out;
}

}  // namespace
}  // namespace tessera::app
