#include "sim/mig_replay/fleet.h"

#include <cstdio>
#include <map>

#include "core/codec/json_util.h"
#include "core/config/scheduler_config.h"
#include "sim/scenario.h"

namespace tessera::sim::mig_replay {
namespace {

bool PlainProfileName(const std::string& name) {
  return name.find_first_of("+-") == std::string::npos;
}

}  // namespace

const std::vector<FleetSpec>& AllFleets() {
  // "mixed" holds the models whose profiles are sevenths of a GPU, so share-based requests
  // mean the same on each. "mixed-rtx" adds the 4-slice RTX PRO 6000 to two 7-slice models, two
  // GPUs per node: only requests that name memory map to a profile on every one of them.
  static const std::vector<FleetSpec> fleets = {
      {"a100-40gb", {"A100-40GB"}, 8},
      {"a100-80gb", {"A100-80GB"}, 8},
      {"h100-80gb", {"H100-SXM5-80GB"}, 8},
      {"h200-141gb", {"H200-141GB"}, 8},
      {"b200-180gb", {"B200-180GB"}, 8},
      {"rtx-pro-6000", {"RTX-PRO-6000-Blackwell-96GB"}, 8},
      {"mixed", {"A100-40GB", "A100-80GB", "H100-SXM5-80GB", "H200-141GB", "B200-180GB"}, 8},
      {"mixed-rtx", {"A100-40GB", "H100-SXM5-80GB", "RTX-PRO-6000-Blackwell-96GB"}, 2},
  };
  return fleets;
}

const FleetSpec* FindFleet(std::string_view name) {
  for (const auto& f : AllFleets()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Result<std::vector<std::string>> BenchProfiles(const mig::GpuModelSpec& spec) {
  std::map<uint32_t, const model::MigProfile*> smallest;  // by compute slices
  for (const auto& p : spec.profiles) {
    if (!PlainProfileName(p.name) || p.placements.empty()) continue;
    auto& best = smallest[p.slice_count];
    if (best == nullptr || p.memory_mib < best->memory_mib) best = &p;
  }
  if (smallest.empty()) return Error{spec.model + ": no MIG profile with placements"};
  std::vector<std::string> names;
  names.reserve(smallest.size());
  for (const auto& [slices, profile] : smallest) names.push_back(profile->name);
  return names;
}

Result<std::vector<model::Node>> BuildFleetNodes(const FleetSpec& spec, int nodes,
                                                 const mig::GpuModelCatalog& catalog) {
  if (spec.models.empty()) return Error{"fleet " + spec.name + ": no GPU model"};
  std::vector<codec::Json> gpu_specs;
  for (const auto& model_name : spec.models) {
    const mig::GpuModelSpec* model = catalog.Find(model_name);
    if (model == nullptr) return Error{"fleet " + spec.name + ": unknown model " + model_name};
    auto profiles = BenchProfiles(*model);
    if (!profiles.ok()) return profiles.error();
    codec::Json gpu = {{"model", model->model},
                       {"mode", "mig"},
                       {"replicas", spec.gpus_per_node},
                       {"profiles", profiles.value()}};
    gpu_specs.push_back(std::move(gpu));
  }
  const config::NvidiaConfig config;
  std::vector<model::Node> out;
  for (int i = 0; i < nodes; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "n%03d", i);
    codec::Json node = {{"name", name},
                        {"gpus", codec::Json::array({gpu_specs[i % gpu_specs.size()]})}};
    auto built = ShorthandNode(node, catalog, config, "fleet " + spec.name);
    if (!built.ok()) return built.error();
    out.push_back(std::move(built.value()));
  }
  return out;
}

}  // namespace tessera::sim::mig_replay
