// `tessera serve --cluster FILE` runs the scenario's steps first: what /ui/state shows is the
// state `tessera simulate FILE` ends in (nodes, GPUs, MIG instances, pending pods).
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "app/serve_process.h"
#include "core/codec/json_util.h"

namespace tessera::app {
namespace {

using codec::Json;
using tessera::testing::RunTessera;
using tessera::testing::ServeProcess;
using tessera::testing::TempDir;

// Every kind of step: creates placed by the scheduler, one pending, a delete that lets a pending
// pod in, a node that loses its device plugin, and a node without the GPU count (live).
constexpr const char* kScenario = R"(
nodes:
  - name: mig-node
    gpus: [{ model: "A100-SXM4-40GB", mode: mig, uuid: GPU-mig-0 }, { model: "A100-SXM4-40GB", mode: mig, uuid: GPU-mig-1 }]
  - name: shared-node
    allocatable: { nvidia.com/gpu: 10 }
    gpus: [{ model: "Tesla T4", memoryMiB: 15360, uuid: GPU-t4 }]
  - name: spare-node
    gpus: [{ model: "Tesla T4", memoryMiB: 15360, uuid: GPU-t4-spare }]
steps:
  - create: { metadata: { name: big, annotations: { nvidia.com/vgpu-mode: mig } }, spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 2, nvidia.com/gpumem: 19000 } } }] } }
  - create: { metadata: { name: small, annotations: { nvidia.com/vgpu-mode: mig } }, spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 2, nvidia.com/gpumem: 9000 } } }] } }
  - create: { metadata: { name: huge, annotations: { nvidia.com/vgpu-mode: mig } }, spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 40000 } } }] } }
  - create: { metadata: { name: share-1 }, spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 12000, nvidia.com/gpucores: 30 } } }] } }
  - create: { metadata: { name: share-2 }, spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 12000, nvidia.com/gpucores: 30 } } }] } }
  - delete: default/big
  - node:
      name: shared-node
      allocatable: { nvidia.com/gpu: 0 }
      gpus: [{ model: "Tesla T4", memoryMiB: 15360, uuid: GPU-t4 }]
  - create: { metadata: { name: share-3 }, spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 12000, nvidia.com/gpucores: 30 } } }] } }
  - create: { metadata: { name: share-4 }, spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 12000, nvidia.com/gpucores: 30 } } }] } }
)";

// One GPU as both outputs can say it: uuid, used, used MiB, used cores, MIG instances
// (pod, profile, start, size).
using Instance = std::tuple<std::string, std::string, int64_t, int64_t>;
struct Gpu {
  std::string uuid;
  int64_t used = 0, mem = 0, cores = 0;
  std::set<Instance> instances;
  bool operator==(const Gpu&) const = default;
};
struct Node {
  std::string reason;  // "" when usable
  std::vector<Gpu> gpus;
  bool operator==(const Node&) const = default;
};
struct View {
  std::map<std::string, Node> nodes;
  std::set<std::string> pending;
};

std::ostream& operator<<(std::ostream& out, const View& v) {
  for (const auto& [name, node] : v.nodes) {
    out << name << " (" << node.reason << "):";
    for (const auto& g : node.gpus) {
      out << " " << g.uuid << " " << g.used << "/" << g.mem << "MiB/" << g.cores << "%";
      for (const auto& [pod, profile, start, size] : g.instances) {
        out << " " << pod << "=" << profile << "@" << start << "+" << size;
      }
    }
    out << "\n";
  }
  for (const auto& p : v.pending) out << "pending " << p << "\n";
  return out;
}

// `tessera simulate -o json`: the final object, and the pods still pending at the end.
View FromSimulate(const std::string& json_lines) {
  View v;
  std::istringstream in(json_lines);
  for (std::string line; std::getline(in, line);) {
    const Json j = Json::parse(line);
    if (j.contains("final")) {
      for (const Json& n : j["nodes"]) {
        Node& node = v.nodes[n["name"].get<std::string>()];
        node.reason = n.value("unusable", "");
        for (const Json& g : n["gpus"]) {
          Gpu gpu{g["uuid"], g["used"], g["usedMemMiB"], g["usedCores"], {}};
          for (const Json& i : g.value("instances", Json::array())) {
            gpu.instances.emplace(i["pod"], i["profile"], i["start"], i["size"]);
          }
          node.gpus.push_back(gpu);
        }
      }
    } else if (j.contains("scheduled") && !j["scheduled"].get<bool>()) {
      v.pending.insert(j["pod"].get<std::string>());
    } else if (j.contains("pod")) {
      v.pending.erase(j["pod"].get<std::string>());  // placed by a retry, or deleted
    }
  }
  return v;
}

// /ui/state (docs/ui.md).
View FromUiState(const std::string& body) {
  const Json j = Json::parse(body);
  const Json& strings = j["strings"];
  View v;
  for (const Json& n : j["nodes"]) {
    Node& node = v.nodes[n["name"].get<std::string>()];
    node.reason = n["reason"];
    std::vector<std::string> pods;  // the node's pods, numbered as the GPUs name them
    for (const Json& group : n["pods"]) {
      const std::string ns = strings[group[0].get<size_t>()];
      for (size_t i = 1; i < group.size(); ++i)
        pods.push_back(ns + "/" + group[i].get<std::string>());
    }
    for (const Json& g : n["gpus"]) {
      Gpu gpu{g[1], g[3], g[4], g[5], {}};
      for (const Json& i : g[6]) {
        gpu.instances.emplace(pods.at(i[0].get<size_t>()), strings[i[1].get<size_t>()], i[2], i[3]);
      }
      node.gpus.push_back(gpu);
    }
  }
  for (const Json& w : j["waiting"]) v.pending.insert(w[0].get<std::string>());
  return v;
}

TEST(ServeClusterTest, TheServedStateIsTheStateSimulateEndsIn) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string scenario = (dir.path() / "cluster.yaml").string();
  std::ofstream(scenario) << kScenario;

  std::string simulated;
  ASSERT_EQ(RunTessera("simulate", "-o json " + scenario, &simulated), 0) << simulated;
  const View expected = FromSimulate(simulated);
  // The scenario does what it is for: a pod placed after a delete, a node without a plugin, and
  // pods still pending at the end.
  ASSERT_EQ(expected.nodes.at("shared-node").reason.find("node unregistered: no live device"), 0U)
      << expected;
  EXPECT_EQ(expected.pending, (std::set<std::string>{"default/share-4"})) << expected;
  EXPECT_EQ(
      expected.nodes.at("mig-node").gpus[0].instances.count({"default/huge", "7g.40gb", 0, 8}), 1U)
      << expected;

  ServeProcess serve({"--cluster", scenario, "--http-bind", "127.0.0.1:0"},
                     dir.path() / "serve.log");
  const std::string port = serve.WaitForPort("tessera serve listening on 127.0.0.1:");
  ASSERT_FALSE(port.empty()) << serve.log();
  httplib::Client client("127.0.0.1", std::stoi(port));
  auto state = client.Get("/ui/state");
  ASSERT_TRUE(state);
  ASSERT_EQ(state->status, 200);
  const View served = FromUiState(state->body);
  EXPECT_EQ(served.nodes, expected.nodes) << "served:\n" << served << "simulated:\n" << expected;
  EXPECT_EQ(served.pending, expected.pending) << "served:\n"
                                              << served << "simulated:\n"
                                              << expected;
  EXPECT_NE(serve.log().find("9 steps run, 3 nodes, 5 running pods, 1 pending"), std::string::npos)
      << serve.log();
  // A pending pod is explained as `tessera explain --cluster` explains it.
  auto explained = client.Get("/explain?pod=default/share-4");
  ASSERT_TRUE(explained);
  EXPECT_EQ(explained->status, 200) << explained->body;
  EXPECT_EQ(serve.Stop(), 0) << serve.log();
}

}  // namespace
}  // namespace tessera::app
