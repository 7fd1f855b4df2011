#include "sim/mig_replay/optimum_study.h"

#include <random>

#include "sim/mig_replay/fleet.h"
#include "sim/mig_replay/offline_optimum.h"
#include "sim/mig_replay/protocol.h"

namespace tessera::sim::mig_replay {

Result<std::vector<OptimumCase>> RunOptimumStudy(const std::vector<std::string>& policies,
                                                 const OptimumStudyOptions& options,
                                                 const mig::GpuModelCatalog& catalog,
                                                 std::span<const sched::NodePolicy> node_policies) {
  std::vector<OptimumCase> cases;
  const std::vector<Workload> workloads = {MakeSyntheticWorkload(SyntheticMix::kUniform),
                                           MakeSyntheticWorkload(SyntheticMix::kSmallHeavy),
                                           MakeSyntheticWorkload(SyntheticMix::kLargeHeavy)};
  for (const auto& model : options.models) {
    for (int gpus : options.gpu_counts) {
      const FleetSpec spec{model, {model}, gpus};
      auto nodes = BuildFleetNodes(spec, 1, catalog);
      if (!nodes.ok()) return nodes.error();
      for (const Workload& workload : workloads) {
        for (uint64_t seed : options.seeds) {
          std::mt19937_64 rng(seed);
          const std::vector<Arrival> arrivals =
              SampleArrivals(workload, static_cast<size_t>(options.requests), rng);
          OptimumCase c;
          c.model = model;
          c.gpus = gpus;
          c.workload = workload.name;
          c.seed = seed;
          c.requests = options.requests;
          {
            MigCluster cluster(nodes.value(), workload);
            auto optimum = OfflineOptimumServedSlices(cluster, arrivals);
            if (!optimum.ok()) return optimum.error();
            c.optimum = optimum.value();
          }
          for (const auto& policy : policies) {
            MigCluster cluster(nodes.value(), workload);
            auto made = MakeMigPolicy(policy, cluster, node_policies);
            if (!made.ok()) return made.error();
            PolicyPlacer placer(cluster, *made.value());
            c.served[policy] = RunSaturation(placer, arrivals, 0).served_slices;
          }
          cases.push_back(std::move(c));
        }
      }
    }
  }
  return cases;
}

std::string OptimumCsv(const std::vector<OptimumCase>& cases,
                       const std::vector<std::string>& policies) {
  std::string out = "model,gpus,workload,seed,requests,optimum_slices";
  for (const auto& p : policies) out += "," + p + "_slices";
  out += "\n";
  for (const OptimumCase& c : cases) {
    out += c.model + "," + std::to_string(c.gpus) + "," + c.workload + "," +
           std::to_string(c.seed) + "," + std::to_string(c.requests) + "," +
           std::to_string(c.optimum);
    for (const auto& p : policies) {
      auto it = c.served.find(p);
      out += "," + (it == c.served.end() ? std::string() : std::to_string(it->second));
    }
    out += "\n";
  }
  return out;
}

}  // namespace tessera::sim::mig_replay
