#pragma once

// Policies against the offline optimum on tiny seeded instances (docs/mig-replay.md, "Bounds"):
// one node with 1 or 2 GPUs, a short stream of single-instance requests, protocol (a) without
// the early stop. Measured in served memory slices (of the intended profiles).

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/mig/catalog.h"
#include "core/sched/node_policy.h"

namespace tessera::sim::mig_replay {

struct OptimumCase {
  std::string model;
  int gpus = 0;
  std::string workload;
  uint64_t seed = 0;
  int requests = 0;
  int64_t optimum = 0;                    // served slices, offline optimum
  std::map<std::string, int64_t> served;  // per policy
};

struct OptimumStudyOptions {
  std::vector<std::string> models = {"A100-40GB", "H100-SXM5-80GB", "RTX-PRO-6000-Blackwell-96GB"};
  std::vector<int> gpu_counts = {1, 2};
  std::vector<uint64_t> seeds = {42, 43, 44, 45, 46};
  int requests = 16;
};

// `node_policies`: the operators' policies that "tessera:NAME" in `policies` names.
Result<std::vector<OptimumCase>> RunOptimumStudy(
    const std::vector<std::string>& policies, const OptimumStudyOptions& options,
    const mig::GpuModelCatalog& catalog, std::span<const sched::NodePolicy> node_policies = {});

// model,gpus,workload,seed,requests,optimum_slices,<policy>_slices...
std::string OptimumCsv(const std::vector<OptimumCase>& cases,
                       const std::vector<std::string>& policies);

}  // namespace tessera::sim::mig_replay
