#include "scheduler/ui_state.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "core/codec/json_util.h"
#include "support/builders.h"

namespace tessera::scheduler {
namespace {

using codec::Json;
using state::ClusterState;
using state::PodReservation;
using testing::NodeWith;
using testing::RtxPro6000Mig;
using testing::SharingGpu;

PodReservation Share(const std::string& key, const std::string& node, const std::string& uuid,
                     int mem) {
  return PodReservation{key, "u", node, 0, {{{uuid, "NVIDIA", mem, 10}}}, {}};
}

PodReservation MigPod(const std::string& key, const std::string& node, const std::string& uuid,
                      uint32_t start) {
  return PodReservation{key,
                        "u",
                        node,
                        0,
                        {{{uuid, "NVIDIA", 24192, 25}}},
                        {{0, 0, uuid, "1g.24gb", {start, 3}, std::nullopt}}};
}

// The state with every index resolved (strings, kinds, node-local pod numbers): what the page
// shows, whatever order the tables were filled in.
Json Resolve(const std::string& body) {
  const Json j = Json::parse(body);
  auto str = [&](const Json& i) { return j["strings"][i.get<size_t>()]; };
  Json nodes = Json::array();
  for (const Json& n : j["nodes"]) {
    std::vector<std::string> pods;
    for (const Json& group : n["pods"]) {
      for (size_t k = 1; k < group.size(); ++k) {
        pods.push_back(str(group[0]).get<std::string>() + "/" + group[k].get<std::string>());
      }
    }
    Json gpus = Json::array();
    for (const Json& g : n["gpus"]) {
      const Json& kind = j["kinds"][g[2].get<size_t>()];
      Json instances = Json::array();
      for (const Json& i : g[6]) {
        instances.push_back({pods.at(i[0].get<size_t>()), str(i[1]), i[2], i[3]});
      }
      Json holders = Json::array();
      for (const Json& p : g[7]) holders.push_back(pods.at(p.get<size_t>()));
      Json shares = Json::array();
      if (g.size() > 8) {
        for (const Json& share : g[8]) shares.push_back(str(share));
      }
      gpus.push_back({g[0], g[1], str(kind[0]), str(kind[1]), kind[2], kind[3], kind[4], kind[5],
                      g[3], g[4], g[5], instances, holders, shares});
    }
    nodes.push_back({{"name", n["name"]}, {"reason", n["reason"]}, {"pods", pods}, {"gpus", gpus}});
  }
  return {{"nodes", nodes}, {"waiting", j["waiting"]}};
}

TEST(UiStateTest, ShowsSharesHoldersAndMigInstancesByName) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(NodeWith("mig", {RtxPro6000Mig("GPU-r")}));
  s.UpsertNode(NodeWith("shared", {SharingGpu("GPU-a"), SharingGpu("GPU-b", 32768, 0, 1)}));
  s.AddPod(MigPod("team-a/train", "mig", "GPU-r", 6));
  s.AddPod(Share("team-b/nb1", "shared", "GPU-b", 1000));
  s.AddPod(Share("team-a/nb2", "shared", "GPU-b", 2000));
  const Json r = Resolve(EncodeUiState(s, {{"team-c/big", "0/2 nodes are available"}}));
  ASSERT_EQ(r["nodes"].size(), 2U);
  const Json& mig = r["nodes"][0];
  EXPECT_EQ(mig["name"], "mig");
  EXPECT_EQ(mig["pods"], Json::array({"team-a/train"}));
  EXPECT_EQ(mig["gpus"][0][11], Json::array({Json::array({"team-a/train", "1g.24gb", 6, 3})}));
  EXPECT_EQ(mig["gpus"][0][7], 12);  // memory slices
  const Json& shared = r["nodes"][1];
  EXPECT_EQ(shared["pods"], Json::array({"team-a/nb2", "team-b/nb1"}));  // grouped by namespace
  EXPECT_EQ(shared["gpus"][0][12], Json::array());
  EXPECT_EQ(shared["gpus"][1][12], Json::array({"team-a/nb2", "team-b/nb1"}));
  EXPECT_EQ(shared["gpus"][1][8], 2);     // tasks used
  EXPECT_EQ(shared["gpus"][1][9], 3000);  // MiB used
  // Each holder's share, in the holders' order: "MiB/cores".
  EXPECT_EQ(shared["gpus"][1][13], Json::array({"2000/10", "1000/10"}));
  // Left out where nobody holds a share: an idle shared GPU, a MIG GPU (whose instances name
  // their pods).
  const Json body = Json::parse(EncodeUiState(s, {}));
  EXPECT_EQ(body["nodes"][1]["gpus"][0].size(), 8U);
  EXPECT_EQ(body["nodes"][0]["gpus"][0].size(), 8U);
  EXPECT_EQ(body["nodes"][1]["gpus"][1].size(), 9U);
  EXPECT_EQ(r["waiting"], Json::array({Json::array({"team-c/big", "0/2 nodes are available"})}));
}

// A holder's share is collapsed as the GPU's use is: init containers at their peak, app
// containers added up, the larger of the two.
TEST(UiStateTest, AHoldersShareCountsInitContainersAtTheirPeak) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(NodeWith("shared", {SharingGpu("GPU-a")}));
  s.AddPod(PodReservation{"ns/p",
                          "u",
                          "shared",
                          1,
                          {{{"GPU-a", "NVIDIA", 3000, 5}},
                           {{"GPU-a", "NVIDIA", 1000, 20}},
                           {{"GPU-a", "NVIDIA", 1500, 20}}},
                          {}});
  const Json r = Resolve(EncodeUiState(s, {}));
  EXPECT_EQ(r["nodes"][0]["gpus"][0][13], Json::array({"3000/40"}));
}

// A pod whose allocation annotation does not decode holds the GPU whole: its share says so.
TEST(UiStateTest, APodHoldingAGpuWholeHasTheShareWhole) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(NodeWith("shared", {SharingGpu("GPU-a")}));
  s.AddPod(PodReservation{"ns/odd", "u", "shared", 0, {}, {}, 0, {"GPU-a"}, "unreadable"});
  s.AddPod(Share("ns/p", "shared", "GPU-a", 1000));
  const Json r = Resolve(EncodeUiState(s, {}));
  EXPECT_EQ(r["nodes"][0]["gpus"][0][12], Json::array({"ns/odd", "ns/p"}));
  EXPECT_EQ(r["nodes"][0]["gpus"][0][13], Json::array({"whole", "1000/10"}));
}

TEST(UiStateTest, APollReEncodesOnlyTheNodesThatChanged) {
  ClusterState s{config::SchedulerConfig{}};
  for (int i = 0; i < 20; ++i)
    s.UpsertNode(NodeWith("n" + std::to_string(i), {SharingGpu("GPU-" + std::to_string(i))}));
  UiStateEncoder encoder;
  const auto first = encoder.Collect(s, {});
  EXPECT_EQ(encoder.last_encoded(), 20U);
  const auto again = encoder.Collect(s, {});
  EXPECT_EQ(encoder.last_encoded(), 0U);
  EXPECT_EQ(again.version, first.version);
  EXPECT_EQ(again.Join(), first.Join());
  s.AddPod(Share("ns/p", "n7", "GPU-7", 1000));
  const auto after = encoder.Collect(s, {});
  EXPECT_EQ(encoder.last_encoded(), 1U);
  EXPECT_NE(after.version, first.version);
  // Only the waiting list changed: no node is encoded, the version still moves.
  const auto waiting = encoder.Collect(s, {{"ns/q", "why"}});
  EXPECT_EQ(encoder.last_encoded(), 0U);
  EXPECT_NE(waiting.version, after.version);
  s.RemoveNode("n3");
  const auto removed = encoder.Collect(s, {{"ns/q", "why"}});
  EXPECT_NE(removed.version, waiting.version);
  EXPECT_EQ(Json::parse(removed.Join())["nodes"].size(), 19U);
}

// The string table is append-only; pods in 400 namespaces that came and went (or that a client
// made up) leave it holding only what the nodes use now once it is mostly unused.
TEST(UiStateTest, TheStringTableIsBuiltAfreshWhenMostOfItIsUnused) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(NodeWith("n1", {SharingGpu("GPU-1", 1 << 20)}));
  UiStateEncoder encoder;
  encoder.Collect(s, {});
  const size_t baseline = encoder.strings_size();
  std::vector<std::string> keys;
  for (int i = 0; i < 400; ++i) {
    keys.push_back("ns" + std::to_string(i) + "/p");
    s.AddPod(Share(keys.back(), "n1", "GPU-1", 10));
    if (i % 50 == 49) encoder.Collect(s, {});
  }
  EXPECT_EQ(encoder.strings_size(), baseline + 400 + 1);  // the namespaces, one share "10/10"
  for (size_t i = 0; i + 1 < keys.size(); ++i) s.RemovePod(keys[i]);
  const auto snap = encoder.Collect(s, {});
  EXPECT_EQ(encoder.strings_size(), baseline + 1 + 1);
  EXPECT_EQ(Resolve(snap.Join()), Resolve(EncodeUiState(s, {})));
  for (int i = 0; i < 100; ++i) s.AddPod(Share("other/p" + std::to_string(i), "n1", "GPU-1", 10));
  EXPECT_EQ(Resolve(encoder.Collect(s, {}).Join()), Resolve(EncodeUiState(s, {})));
}

// Whatever happened in between, a kept encoder says what a fresh encoding of the same state
// says (indices may differ; names, numbers and order may not).
TEST(UiStateTest, IncrementalEncodingMatchesAFreshOneThroughRandomChanges) {
  ClusterState s{config::SchedulerConfig{}};
  std::mt19937 rng(7);
  UiStateEncoder encoder;
  std::map<std::string, std::string> waiting;
  std::vector<std::string> live;
  for (int step = 0; step < 400; ++step) {
    const int node = static_cast<int>(rng() % 8);
    const std::string name = "node-" + std::to_string(node);
    const std::string uuid = "GPU-" + std::to_string(node);
    switch (rng() % 6) {
      case 0:  // (re)register, MIG on odd nodes
        s.UpsertNode(NodeWith(name, {node % 2 ? RtxPro6000Mig(uuid) : SharingGpu(uuid)}));
        break;
      case 1:
        s.RemoveNode(name);
        break;
      case 2:
      case 3: {
        const std::string key = "ns" + std::to_string(rng() % 3) + "/p" + std::to_string(step);
        s.AddPod(node % 2 ? MigPod(key, name, uuid, 3 * (rng() % 4))
                          : Share(key, name, uuid, 500 + static_cast<int>(rng() % 4000)));
        live.push_back(key);
        break;
      }
      case 4:
        if (!live.empty()) {
          const size_t k = rng() % live.size();
          s.RemovePod(live[k]);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        }
        break;
      default:
        if (waiting.size() < 3) {
          waiting["w/" + std::to_string(step)] = "0/8 nodes";
        } else {
          waiting.clear();
        }
    }
    if (step % 3 == 0) {
      ASSERT_EQ(Resolve(encoder.Collect(s, waiting).Join()), Resolve(EncodeUiState(s, waiting)))
          << "step " << step;
    }
  }
}

}  // namespace
}  // namespace tessera::scheduler
