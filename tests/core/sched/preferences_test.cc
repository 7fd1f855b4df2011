#include "core/sched/preferences.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "support/builders.h"

namespace tessera::sched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::PodBuilder;

constexpr char kWeightsPrefix[] = "invalid hami.io/device-scoring-weights annotation \"";

// --- ParseNodePolicy -------------------------------------------------------------------------

TEST(ParseNodePolicyTest, ReadsBinpackAndSpread) {
  EXPECT_EQ(ParseNodePolicy("binpack").value(), NodePolicy::Binpack());
  EXPECT_EQ(ParseNodePolicy("spread").value(), NodePolicy::Spread());
  EXPECT_EQ(ParseNodePolicy(" spread ").value(), NodePolicy::Spread());
}

TEST(ParseNodePolicyTest, ReadsTesseraAndItIsTheDefault) {
  EXPECT_EQ(ParseNodePolicy("tessera").value(), NodePolicy::Tessera());
  EXPECT_EQ(PolicyDefaults{}.node, NodePolicy::Tessera());
  EXPECT_EQ(PolicyDefaults{}.gpu, "tessera");
}

TEST(ParseNodePolicyTest, UnknownNameIsAnError) {
  for (const char* text : {"", "Spread", "topology-aware", "binpack,spread"}) {
    SCOPED_TRACE(text);
    auto p = ParseNodePolicy(text);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().message, std::string("unknown node scheduler policy \"") + text +
                                     "\" (expected tessera, binpack or spread)");
  }
}

// --- ParseGpuPolicy --------------------------------------------------------------------------

TEST(ParseGpuPolicyTest, ReadsEachSinglePolicy) {
  for (const char* name : {"binpack", "spread", "numa", "topology-aware", "mutex"}) {
    SCOPED_TRACE(name);
    auto p = ParseGpuPolicy(name);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_THAT(p->tokens, ElementsAre(name));
    EXPECT_EQ(p->Single(), name);
  }
}

TEST(ParseGpuPolicyTest, TesseraIsAFlagAndHamiNamesWithItOrderTheRest) {
  auto alone = ParseGpuPolicy("tessera");
  ASSERT_TRUE(alone.ok()) << alone.error().message;
  EXPECT_TRUE(alone->tessera);
  EXPECT_TRUE(alone->tokens.empty());
  EXPECT_EQ(alone->Single(), "spread");  // HAMi's default order among equals
  auto packing = ParseGpuPolicy("tessera, binpack");
  ASSERT_TRUE(packing.ok()) << packing.error().message;
  EXPECT_TRUE(packing->tessera);
  EXPECT_THAT(packing->tokens, ElementsAre("binpack"));
  EXPECT_FALSE(packing->IsChain());  // HAMi's single-name binpack order, not a chain
  auto hami = ParseGpuPolicy("binpack");
  ASSERT_TRUE(hami.ok());
  EXPECT_FALSE(hami->tessera);
}

TEST(ParseGpuPolicyTest, FlagsMutexAndTopologyAware) {
  auto mutex = ParseGpuPolicy("mutex");
  ASSERT_TRUE(mutex.ok());
  EXPECT_TRUE(mutex->mutex);
  EXPECT_FALSE(mutex->topology_aware);
  auto topology = ParseGpuPolicy("topology-aware");
  ASSERT_TRUE(topology.ok());
  EXPECT_TRUE(topology->topology_aware);
  EXPECT_FALSE(topology->mutex);
  auto both = ParseGpuPolicy("binpack,topology-aware,mutex");
  ASSERT_TRUE(both.ok());
  EXPECT_TRUE(both->mutex);
  EXPECT_TRUE(both->topology_aware);
}

TEST(ParseGpuPolicyTest, ReadsACommaListTrimmingTokensAndSkippingEmptyOnes) {
  auto p = ParseGpuPolicy(" binpack , ,numa,");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_THAT(p->tokens, ElementsAre("binpack", "numa"));
}

TEST(ParseGpuPolicyTest, EmptyPolicyIsAnError) {
  for (const char* text : {"", " ", ",,"}) {
    SCOPED_TRACE(text);
    auto p = ParseGpuPolicy(text);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().message, "empty GPU scheduler policy");
  }
}

TEST(ParseGpuPolicyTest, UnknownNameIsAnErrorNamingTheFirstUnknownToken) {
  struct Case {
    const char* text;
    const char* token;
  };
  const std::vector<Case> cases = {
      {"best-fit", "best-fit"},
      {"binpack,Spread", "Spread"},
      {"topology", "topology"},
      {"numa, foo ,bar", "foo"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto p = ParseGpuPolicy(c.text);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().message,
              std::string("unknown GPU scheduler policy \"") + c.token +
                  "\" (expected tessera, binpack, spread, numa, topology-aware or mutex)");
  }
}

TEST(GpuPolicyTest, IsAChainForACommaListOrNuma) {
  EXPECT_TRUE(ParseGpuPolicy("numa")->IsChain());
  EXPECT_TRUE(ParseGpuPolicy("binpack,numa")->IsChain());
  EXPECT_TRUE(ParseGpuPolicy("spread,mutex")->IsChain());
  EXPECT_FALSE(ParseGpuPolicy("binpack")->IsChain());
  EXPECT_FALSE(ParseGpuPolicy("mutex")->IsChain());
  EXPECT_FALSE(GpuPolicy{}.IsChain());
}

TEST(GpuPolicyTest, ChainKeepsSortKeysInWrittenOrderWithoutDuplicates) {
  EXPECT_THAT(ParseGpuPolicy("numa,binpack,numa,spread")->Chain(false),
              ElementsAre("numa", "binpack", "spread"));
}

TEST(GpuPolicyTest, ChainIgnoresMutexAndTopologyAware) {
  EXPECT_THAT(ParseGpuPolicy("mutex,binpack,topology-aware")->Chain(false), ElementsAre("binpack"));
}

TEST(GpuPolicyTest, ChainWithoutSortKeysIsSpread) {
  EXPECT_THAT(ParseGpuPolicy("mutex,topology-aware")->Chain(false), ElementsAre("spread"));
}

TEST(GpuPolicyTest, NumaBindMovesNumaToTheFront) {
  EXPECT_THAT(ParseGpuPolicy("binpack,numa")->Chain(true), ElementsAre("numa", "binpack"));
  EXPECT_THAT(ParseGpuPolicy("binpack,spread")->Chain(true),
              ElementsAre("numa", "binpack", "spread"));
  EXPECT_THAT(ParseGpuPolicy("numa,binpack")->Chain(true), ElementsAre("numa", "binpack"));
}

TEST(GpuPolicyTest, EmptyPolicyIsSingleSpread) { EXPECT_EQ(GpuPolicy{}.Single(), "spread"); }

// --- ParseScoringWeights ---------------------------------------------------------------------

TEST(ParseScoringWeightsTest, ReadsTheProtocolExample) {
  auto w = ParseScoringWeights("slot=1,core=1,memory=3");
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->slot, 1);
  EXPECT_EQ(w->core, 1);
  EXPECT_EQ(w->memory, 3);
}

TEST(ParseScoringWeightsTest, AcceptsAnyOrderSpacesAndZeroWeights) {
  auto w = ParseScoringWeights(" memory = 0 , slot=5,core= 0");
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->slot, 5);
  EXPECT_EQ(w->core, 0);
  EXPECT_EQ(w->memory, 0);
}

TEST(ParseScoringWeightsTest, AcceptsInt64Weights) {
  auto w = ParseScoringWeights("slot=9223372036854775807,core=0,memory=0");
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->slot, 9223372036854775807LL);
}

TEST(ParseScoringWeightsTest, DefaultWeightsAreOneEach) {
  ScoringWeights w;
  EXPECT_EQ(w.slot, 1);
  EXPECT_EQ(w.core, 1);
  EXPECT_EQ(w.memory, 1);
}

TEST(ParseScoringWeightsTest, InvalidValueIsAnErrorQuotingTheAnnotation) {
  struct Case {
    const char* name;
    const char* text;
    const char* why;
  };
  const std::vector<Case> cases = {
      {"empty", "", "expected exactly slot=<n>,core=<n>,memory=<n>"},
      {"two parts", "slot=1,core=1", "expected exactly slot=<n>,core=<n>,memory=<n>"},
      {"four parts", "slot=1,core=1,memory=1,slot=1",
       "expected exactly slot=<n>,core=<n>,memory=<n>"},
      {"part without equals", "slot=1,core,memory=1", "\"core\" has no '='"},
      {"empty part", "slot=1,,memory=1", "\"\" has no '='"},
      {"duplicate key", "slot=1,core=1,core=2", "duplicate \"core\" weight"},
      {"not an integer", "slot=1,core=x,memory=1", "\"core\" weight \"x\" is not an integer"},
      {"fraction", "slot=1.5,core=1,memory=1", "\"slot\" weight \"1.5\" is not an integer"},
      {"empty value", "slot=,core=1,memory=1", "\"slot\" weight \"\" is not an integer"},
      {"overflow", "slot=9223372036854775808,core=1,memory=1",
       "\"slot\" weight \"9223372036854775808\" is not an integer"},
      {"negative", "slot=1,core=-1,memory=3", "\"core\" weight must not be negative"},
      {"unknown key", "slot=1,core=1,gpu=1",
       "unknown weight \"gpu\" (expected slot, core, memory)"},
      {"keys are case sensitive", "slot=1,Core=1,memory=1",
       "unknown weight \"Core\" (expected slot, core, memory)"},
      {"all zero", "slot=0,core=0,memory=0", "all weights are zero"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto w = ParseScoringWeights(c.text);
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.error().message, std::string(kWeightsPrefix) + c.text + "\": " + c.why);
  }
}

// --- ParsePreferences ------------------------------------------------------------------------

TEST(ParsePreferencesTest, PodWithoutAnnotationsGetsTheDefaults) {
  PolicyDefaults defaults;
  defaults.node = NodePolicy::Spread();
  defaults.gpu = "binpack";
  auto p = ParsePreferences(PodBuilder("ns/p").Build(), defaults);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_THAT(p->use_types, IsEmpty());
  EXPECT_THAT(p->nouse_types, IsEmpty());
  EXPECT_THAT(p->use_uuids, IsEmpty());
  EXPECT_THAT(p->nouse_uuids, IsEmpty());
  EXPECT_EQ(p->vgpu_mode, VgpuMode::kAny);
  EXPECT_FALSE(p->numa_bind);
  EXPECT_EQ(p->node_policy, NodePolicy::Spread());
  EXPECT_THAT(p->gpu_policy.tokens, ElementsAre("binpack"));
  EXPECT_EQ(p->weights.slot, 1);
  EXPECT_EQ(p->weights.core, 1);
  EXPECT_EQ(p->weights.memory, 1);
}

TEST(ParsePreferencesTest, TypeListsAreTrimmedUpperCasedAndSkipEmptyTokens) {
  auto p = ParsePreferences(PodBuilder("ns/p")
                                .Annotation("nvidia.com/use-gputype", " a100 ,V100,,")
                                .Annotation("nvidia.com/nouse-gputype", "1080, rtx 2080")
                                .Build(),
                            {});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_THAT(p->use_types, ElementsAre("A100", "V100"));
  EXPECT_THAT(p->nouse_types, ElementsAre("1080", "RTX 2080"));
}

TEST(ParsePreferencesTest, WhitespaceTypeListIsNoConstraint) {
  auto p =
      ParsePreferences(PodBuilder("ns/p").Annotation("nvidia.com/use-gputype", "  ").Build(), {});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_THAT(p->use_types, IsEmpty());
}

TEST(ParsePreferencesTest, UuidListsAreTrimmedAndKeepTheirCase) {
  auto p = ParsePreferences(PodBuilder("ns/p")
                                .Annotation("nvidia.com/use-gpuuuid", "GPU-03f6, GPU-0fc3")
                                .Annotation("nvidia.com/nouse-gpuuuid", "gpu-abc ,")
                                .Build(),
                            {});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_THAT(p->use_uuids, ElementsAre("GPU-03f6", "GPU-0fc3"));
  EXPECT_THAT(p->nouse_uuids, ElementsAre("gpu-abc"));
}

TEST(ParsePreferencesTest, NumaBindFollowsGoParseBool) {
  struct Case {
    const char* value;
    bool want;
  };
  const std::vector<Case> cases = {
      {"true", true},   {"1", true},      {"t", true},     {"T", true},    {"TRUE", true},
      {"True", true},   {"false", false}, {"0", false},    {"yes", false}, {"on", false},
      {" true", false}, {"true ", false}, {"tRuE", false}, {"", false},    {"enabled", false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.value);
    auto p = ParsePreferences(
        PodBuilder("ns/p").Annotation("nvidia.com/numa-bind", c.value).Build(), {});
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->numa_bind, c.want);
  }
}

TEST(ParsePreferencesTest, VgpuModeAcceptsEachKnownMode) {
  for (const char* mode : {"mig", "hami-core", "mps"}) {
    SCOPED_TRACE(mode);
    auto p =
        ParsePreferences(PodBuilder("ns/p").Annotation("nvidia.com/vgpu-mode", mode).Build(), {});
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(ToString(p->vgpu_mode), mode);
  }
}

TEST(VgpuModeTest, OneReadingEverywhere) {
  EXPECT_TRUE(ModeAdmits(VgpuMode::kAny, "mig"));
  EXPECT_TRUE(ModeAdmits(VgpuMode::kAny, "hami-core"));
  EXPECT_TRUE(ModeAdmits(VgpuMode::kMig, "mig"));
  EXPECT_FALSE(ModeAdmits(VgpuMode::kMig, "hami-core"));
  EXPECT_FALSE(ModeAdmits(VgpuMode::kHamiCore, "mig"));
  EXPECT_TRUE(ModeAdmits(VgpuMode::kHamiCore, "core"));  // HAMi's containment, kept
  EXPECT_FALSE(ModeAdmits(VgpuMode::kMps, "hami-core"));
  EXPECT_TRUE(MayUseMig(VgpuMode::kAny));
  EXPECT_FALSE(MayUseMig(VgpuMode::kMps));
  EXPECT_TRUE(MigOnly(VgpuMode::kMig));
  EXPECT_FALSE(MigOnly(VgpuMode::kAny));
  auto parsed =
      ParseVgpuMode(PodBuilder("ns/p").Annotation("nvidia.com/vgpu-mode", " mig ").Build());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, VgpuMode::kMig);
  EXPECT_FALSE(
      ParseVgpuMode(PodBuilder("ns/p").Annotation("nvidia.com/vgpu-mode", "migx").Build()).ok());
}

TEST(ParsePreferencesTest, VgpuModeIsTrimmed) {
  auto p =
      ParsePreferences(PodBuilder("ns/p").Annotation("nvidia.com/vgpu-mode", " mig ").Build(), {});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->vgpu_mode, VgpuMode::kMig);
}

TEST(ParsePreferencesTest, UnknownVgpuModeIsAnErrorNamingPodAndAnnotation) {
  for (const char* mode : {"MIG", "mig,mps", "", "time-slicing"}) {
    SCOPED_TRACE(mode);
    auto p =
        ParsePreferences(PodBuilder("ns/p").Annotation("nvidia.com/vgpu-mode", mode).Build(), {});
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().message, std::string("pod ns/p: annotation nvidia.com/vgpu-mode: unknown "
                                             "mode \"") +
                                     mode + "\" (expected mig, hami-core or mps)");
  }
}

TEST(ParsePreferencesTest, NodePolicyAnnotationOverridesTheDefault) {
  PolicyDefaults defaults;
  defaults.node = NodePolicy::Binpack();
  auto p = ParsePreferences(
      PodBuilder("ns/p").Annotation("hami.io/node-scheduler-policy", "spread").Build(), defaults);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->node_policy, NodePolicy::Spread());
}

TEST(ParsePreferencesTest, UnknownNodePolicyIsAnErrorNamingPodAndAnnotation) {
  auto p = ParsePreferences(
      PodBuilder("ns/p").Annotation("hami.io/node-scheduler-policy", "random").Build(), {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "pod ns/p: annotation hami.io/node-scheduler-policy: unknown node scheduler policy "
            "\"random\" (expected tessera, binpack or spread)");
}

TEST(ParsePreferencesTest, NodePolicyAnnotationMayNameAnOperatorsPolicy) {
  PolicyDefaults defaults;
  defaults.defined_node_policies.push_back(
      ParseNodePolicyDefinition("pack-frag=fragmentation:1,hami-node-score:0.5").value());
  auto p = ParsePreferences(
      PodBuilder("ns/p").Annotation("hami.io/node-scheduler-policy", "pack-frag").Build(),
      defaults);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->node_policy, defaults.defined_node_policies[0]);
  auto unknown = ParsePreferences(
      PodBuilder("ns/p").Annotation("hami.io/node-scheduler-policy", "pack").Build(), defaults);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message,
            "pod ns/p: annotation hami.io/node-scheduler-policy: unknown node scheduler policy "
            "\"pack\" (expected tessera, binpack, spread, pack-frag)");
}

TEST(ParsePreferencesTest, GpuPolicyAnnotationOverridesTheDefault) {
  PolicyDefaults defaults;
  defaults.gpu = "spread";
  auto p = ParsePreferences(
      PodBuilder("ns/p").Annotation("hami.io/gpu-scheduler-policy", "binpack,numa").Build(),
      defaults);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_THAT(p->gpu_policy.tokens, ElementsAre("binpack", "numa"));
}

TEST(ParsePreferencesTest, UnknownGpuPolicyAnnotationIsAnErrorNamingPodAndAnnotation) {
  auto p = ParsePreferences(
      PodBuilder("ns/p").Annotation("hami.io/gpu-scheduler-policy", "fastest").Build(), {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "pod ns/p: annotation hami.io/gpu-scheduler-policy: unknown GPU scheduler policy "
            "\"fastest\" (expected tessera, binpack, spread, numa, topology-aware or mutex)");
}

TEST(ParsePreferencesTest, UnknownDefaultGpuPolicyIsAnErrorNamingTheDefault) {
  PolicyDefaults defaults;
  defaults.gpu = "fastest";
  auto p = ParsePreferences(PodBuilder("ns/p").Build(), defaults);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(
      p.error().message,
      "pod ns/p: default GPU policy: unknown GPU scheduler policy \"fastest\" (expected tessera, "
      "binpack, spread, numa, topology-aware or mutex)");
}

TEST(ParsePreferencesTest, ReadsScoringWeights) {
  auto p =
      ParsePreferences(PodBuilder("ns/p")
                           .Annotation("hami.io/device-scoring-weights", "slot=2,core=0,memory=3")
                           .Build(),
                       {});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->weights.slot, 2);
  EXPECT_EQ(p->weights.core, 0);
  EXPECT_EQ(p->weights.memory, 3);
}

TEST(ParsePreferencesTest, InvalidScoringWeightsAreAnErrorNamingThePod) {
  auto p =
      ParsePreferences(PodBuilder("ns/p")
                           .Annotation("hami.io/device-scoring-weights", "slot=1,core=-1,memory=3")
                           .Build(),
                       {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "pod ns/p: invalid hami.io/device-scoring-weights annotation \"slot=1,core=-1,"
            "memory=3\": \"core\" weight must not be negative");
}

}  // namespace
}  // namespace tessera::sched
