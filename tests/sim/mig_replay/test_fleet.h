#pragma once

// Small MIG clusters for the benchmark's tests: one node of one model, built like the fleets.

#include <gtest/gtest.h>

#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "core/mig/catalog.h"
#include "sim/mig_replay/cluster.h"
#include "sim/mig_replay/demand.h"
#include "sim/mig_replay/fleet.h"
#include "sim/mig_replay/policy.h"

namespace tessera::sim::mig_replay::testing {

// Arrivals of these request types in this order, at time 0 (saturation and the optima).
inline std::vector<Arrival> Types(std::initializer_list<int> types) {
  std::vector<Arrival> out;
  out.reserve(types.size());
  for (int t : types) out.push_back(Arrival{t, 0, 0});
  return out;
}

inline const mig::GpuModelCatalog& Catalog() {
  static const mig::GpuModelCatalog catalog = mig::GpuModelCatalog::Builtin().value();
  return catalog;
}

// `nodes` nodes of `gpus` GPUs of `model`.
inline std::vector<model::Node> Nodes(const std::string& model, int gpus, int nodes = 1) {
  auto built = BuildFleetNodes(FleetSpec{model, {model}, gpus}, nodes, Catalog());
  EXPECT_TRUE(built.ok()) << built.error().message;
  return built.value();
}

// The profile index called `name` on GPU `device` of node `node`.
inline int Profile(const MigCluster& cluster, const std::string& name, int node = 0,
                   int device = 0) {
  return cluster.nodes()[node]->mig_models[device].ProfileIndex(name);
}

// Names and starts of the instances on one GPU, as "3g.20gb@4", in placement order.
inline std::vector<std::string> Instances(const MigCluster& cluster, int node, int device) {
  std::vector<std::string> out;
  for (const auto& i : cluster.nodes()[node]->instances[device]) {
    out.push_back(i.profile_name + "@" + std::to_string(i.placement.start));
  }
  return out;
}

// Places a request of `type` as `key`; whether the policy placed it (a policy error fails the
// test).
inline bool Place(MigPolicy& policy, MigCluster& cluster, const std::string& key, int type) {
  std::mt19937_64 rng(1);
  Result<replay::PlaceOutcome> placed = policy.Place(cluster, type, key, rng);
  EXPECT_TRUE(placed.ok()) << placed.error().message;
  return placed.ok() && *placed == replay::PlaceOutcome::kPlaced;
}

}  // namespace tessera::sim::mig_replay::testing
