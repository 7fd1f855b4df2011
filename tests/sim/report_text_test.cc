// `tessera simulate`'s text report: pods keep their letters across steps, GPU ids stay distinct
// on screen, and --final-only prints the decisions and the final state alone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/mig/catalog.h"
#include "sim/report.h"
#include "sim/scenario.h"

namespace tessera::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Scenario Load(const std::string& yaml) {
  auto catalog = mig::GpuModelCatalog::Builtin();
  EXPECT_TRUE(catalog.ok());
  auto scenario = LoadScenarioText(yaml, catalog.value(), "test.yaml");
  EXPECT_TRUE(scenario.ok()) << scenario.error().message;
  return scenario.ok() ? std::move(scenario.value()) : Scenario{};
}

std::string Write(const std::string& yaml, SimulationOutput output = {}) {
  std::ostringstream out;
  WriteSimulation(Load(yaml), output, out);
  return out.str();
}

// A MIG pod asking for `instances` instances of at least `mib` each.
std::string MigPod(const std::string& name, int instances, int mib) {
  return "  - create: { metadata: { name: " + name +
         ", annotations: { nvidia.com/vgpu-mode: mig } }, spec: { containers: [{ name: c0, "
         "resources: { limits: { nvidia.com/gpu: " +
         std::to_string(instances) + ", nvidia.com/gpumem: " + std::to_string(mib) +
         " } } }] } }\n";
}

const char* const kOneRtxPro = R"(
nodes:
  - name: node-a
    gpus: [{ model: "NVIDIA RTX PRO 6000 Blackwell Server Edition", mode: mig, uuid: GPU-30512c46-708b }]
steps:
)";

// The text after the last occurrence of `marker`.
std::string After(const std::string& text, const std::string& marker) {
  const size_t at = text.rfind(marker);
  return at == std::string::npos ? "" : text.substr(at);
}

TEST(TextReportTest, APodKeepsItsLetterAfterAnEarlierPodIsDeleted) {
  const std::string text =
      Write(std::string(kOneRtxPro) + MigPod("p1", 2, 8000) + MigPod("p2", 2, 8000) +
            "  - delete: default/p1\n" + MigPod("p3", 1, 8000));
  // p2 is B while p1 is there, and stays B once p1 is gone; p3 gets a letter of its own.
  EXPECT_THAT(text, HasSubstr("B = default/p2"));
  EXPECT_THAT(text, Not(HasSubstr("A = default/p2")));
  const std::string last = After(text, "step 4:");
  EXPECT_THAT(last, HasSubstr("slices |BBBBBB...CCC|"));
  EXPECT_THAT(last, HasSubstr("B = default/p2: 1g.24gb@3+3 1g.24gb@0+3"));
  EXPECT_THAT(last, HasSubstr("C = default/p3: 1g.24gb@9+3"));
}

TEST(TextReportTest, LettersAreReusedOnlyFromPodsThatHoldNothingOnce62AreGiven) {
  // 9 A100-40GB take 63 1g.5gb instances: 62 pods get A-Z, a-z, 0-9; after default/p0 (A) is
  // deleted, the 63rd pod gets A, and every other pod keeps its letter.
  std::string yaml = R"(
nodes:
  - name: node-a
    gpus: [{ model: "A100-SXM4-40GB", mode: mig, replicas: 9 }]
steps:
)";
  for (int i = 0; i < 62; ++i) yaml += MigPod("p" + std::to_string(i), 1, 4000);
  yaml += "  - delete: default/p0\n" + MigPod("p62", 1, 4000);
  const std::string text = Write(yaml);
  EXPECT_THAT(text, HasSubstr("A = default/p0:"));
  EXPECT_THAT(text, HasSubstr("9 = default/p61:"));
  const std::string last = After(text, "step 64:");
  EXPECT_THAT(last, HasSubstr("A = default/p62:"));
  EXPECT_THAT(last, HasSubstr("B = default/p1:"));
  EXPECT_THAT(last, HasSubstr("9 = default/p61:"));
  EXPECT_THAT(last, Not(HasSubstr("default/p0:")));
}

TEST(TextReportTest, GpuIdsThatShareTheirFirst12CharactersArePrintedUntilTheyDiffer) {
  const Scenario scenario = Load(R"(
nodes:
  - name: node-a
    gpus:
      - { model: "Tesla T4", memoryMiB: 15360, uuid: GPU-12345678-aaaa-0000-1111 }
      - { model: "Tesla T4", memoryMiB: 15360, uuid: GPU-12345678-aaaa-0000-2222 }
      - { model: "Tesla T4", memoryMiB: 15360, uuid: GPU-99999999-bbbb-0000-3333 }
      - { model: "Tesla T4", memoryMiB: 15360, uuid: GPU-short }
steps:
  - node:
      name: node-b
      gpus: [{ model: "Tesla T4", memoryMiB: 15360, uuid: GPU-99999999-bbbb-0000-3334 }]
)");
  TextReport report(scenario);
  EXPECT_EQ(report.GpuId("GPU-12345678-aaaa-0000-1111"), "GPU-12345678-aaaa-0000-1…");
  EXPECT_EQ(report.GpuId("GPU-12345678-aaaa-0000-2222"), "GPU-12345678-aaaa-0000-2…");
  // A node added by a later step counts from the start: the whole screen stays unambiguous.
  EXPECT_EQ(report.GpuId("GPU-99999999-bbbb-0000-3333"), "GPU-99999999-bbbb-0000-3333");
  EXPECT_EQ(report.GpuId("GPU-short"), "GPU-short");
  EXPECT_EQ(report.GpuId("GPU-unknown-to-the-scenario"), "GPU-unknown-to-the-scenario");

  Scenario alone = Load(R"(
nodes:
  - name: node-a
    gpus: [{ model: "Tesla T4", memoryMiB: 15360, uuid: GPU-12345678-aaaa-0000-1111 }]
)");
  EXPECT_EQ(TextReport(alone).GpuId("GPU-12345678-aaaa-0000-1111"), "GPU-12345678…");
}

TEST(TextReportTest, DistinctIdsAppearInDecisionsAndMaps) {
  const std::string text = Write(R"(
nodes:
  - name: node-a
    gpus:
      - { model: "Tesla T4", memoryMiB: 15360, uuid: GPU-12345678-aaaa-0000-1111 }
      - { model: "Tesla T4", memoryMiB: 15360, uuid: GPU-12345678-aaaa-0000-2222 }
steps:
  - create: { metadata: { name: s }, spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 2, nvidia.com/gpumem: 1000 } } }] } }
)");
  EXPECT_THAT(text, HasSubstr("c0: GPU-12345678-aaaa-0000-"));
  EXPECT_THAT(text, HasSubstr("GPU 0 GPU-12345678-aaaa-0000-1… NVIDIA-Tesla T4"));
  EXPECT_THAT(text, HasSubstr("GPU 1 GPU-12345678-aaaa-0000-2… NVIDIA-Tesla T4"));
  EXPECT_THAT(text, Not(HasSubstr("GPU-12345678…")));
}

TEST(TextReportTest, FinalOnlyPrintsTheDecisionsAndTheFinalStateAlone) {
  const std::string yaml = std::string(kOneRtxPro) + MigPod("p1", 2, 8000) + MigPod("p2", 2, 8000) +
                           MigPod("p3", 1, 8000) + "  - delete: default/p1\n";
  const std::string full = Write(yaml);
  const std::string text = Write(yaml, {.json = false, .final_only = true});
  EXPECT_THAT(text, Not(HasSubstr("initial state")));
  // One map: the final one, after every decision.
  EXPECT_EQ(text.find("slices |"), text.rfind("slices |"));
  const size_t final_state = text.find("\nfinal state\n  node node-a\n");
  ASSERT_NE(final_state, std::string::npos) << text;
  EXPECT_LT(text.find("step 4: retry default/p3: scheduled on node-a"), final_state);
  EXPECT_THAT(text, HasSubstr("step 3: create default/p3: PENDING\n"
                              "    0/1 nodes are available: 1 1/1 CardInsufficientMemory.\n"));
  EXPECT_THAT(text.substr(final_state), HasSubstr("slices |AAAAAA...BBB|  72576/97887 MiB"));
  // The same decisions as the full report, line for line.
  auto decisions = [](const std::string& report) {
    std::istringstream in(report);
    std::string out;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("step ", 0) == 0 || line.rfind("    c0:", 0) == 0) out += line + "\n";
    }
    return out;
  };
  EXPECT_EQ(decisions(text), decisions(full));
  EXPECT_THAT(decisions(text), HasSubstr("step 4: delete default/p1: released"));
}

TEST(TextReportTest, JsonIsTheSameWithFinalOnly) {
  const std::string yaml = std::string(kOneRtxPro) + MigPod("p1", 2, 8000);
  const std::string json = Write(yaml, {.json = true, .final_only = false});
  EXPECT_EQ(Write(yaml, {.json = true, .final_only = true}), json);
  EXPECT_THAT(json, HasSubstr("{\"final\":true"));
}

}  // namespace
}  // namespace tessera::sim
