#pragma once

// The offline problem the placement LP (placement_bound.h) and the pattern schedule
// (pattern_schedule.h) are built from: classes of interchangeable GPUs, the stream's requests as
// LP items, and in steady state the groups of requests resident together.

#include <glpk.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/mig_replay/cluster.h"
#include "sim/mig_replay/demand.h"

namespace tessera::sim::mig_replay {

// Interchangeable GPUs: the same rules and the same intended profile for every request type.
struct GpuClass {
  const mig::GpuMigModel* model = nullptr;
  int count = 0;
  int64_t fill = 0;                          // most intended slices one GPU holds
  std::vector<int64_t> size_by_type;         // intended slices of one instance; 0: none
  std::vector<std::vector<uint32_t>> spans;  // per type: PlacementSpans
  std::vector<std::pair<int, int>> members;  // (node, device), in the cluster's order
};

std::vector<GpuClass> Classes(const MigCluster& cluster);

// One request in the LP: its instances, and what one instance-slice of it is worth.
struct Item {
  int type = 0;
  int count = 1;
  double served_weight = 0;  // per intended slice held
  double accept_weight = 0;  // per whole request
};

// Stops GLPK's branch and bound after a fixed number of nodes (deterministic, unlike a time
// limit), keeping the smallest global bound it saw: every one is valid.
struct BranchLimit {
  int nodes = 0;
  double bound = 0;
  bool seen = false;
};

void BranchCallback(glp_tree* tree, void* info);

// Branch and bound from the optimum of `lp`'s LP, quietly, within `limit`'s nodes; true when it
// found a whole solution (read it with glp_mip_*).
bool BranchAndBound(glp_prob* lp, BranchLimit& limit);

struct SteadyProblem {
  std::vector<Item> items;
  std::vector<std::vector<int>> groups;
};

// Protocol (b)'s items (served weight: the measured instants each is resident at, if accepted;
// accept weight: 1 after `warmup`) and the resident groups that dominate the rest.
SteadyProblem SteadyItemsAndGroups(const MigCluster& cluster, const std::vector<Arrival>& arrivals,
                                   size_t warmup);

}  // namespace tessera::sim::mig_replay
