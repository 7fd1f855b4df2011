#pragma once

#include <string>
#include <vector>

#include "core/codec/json_util.h"
#include "core/common/result.h"
#include "core/config/scheduler_config.h"
#include "core/mig/catalog.h"
#include "core/model/disruption_budget.h"
#include "core/model/job_retries.h"
#include "core/model/pod.h"
#include "core/model/resource_quota.h"
#include "core/sched/preferences.h"

namespace tessera::sim {

struct ScenarioStep {
  enum class Kind { kCreate, kDelete, kNode };
  Kind kind = Kind::kCreate;
  model::Pod pod;       // kCreate
  std::string pod_key;  // kDelete: namespace/name
  model::Node node;     // kNode: the node's new state (added or replaced)
};

// A cluster described in a file (docs/simulator.md): config, policy defaults, nodes (shorthand
// or Node objects with register annotations) and a sequence of pod creations and deletions.
struct Scenario {
  config::SchedulerConfig config;
  sched::PolicyDefaults policy;
  std::vector<model::Node> nodes;
  // GPU quotas per namespace: ResourceQuota objects, or {namespace, name, hard} shorthand.
  std::vector<model::ResourceQuota> quotas;
  // PodDisruptionBudgets (policy/v1 objects, status.disruptionsAllowed as the disruption
  // controller would set it): what the defragmentation planner and /preempt count.
  std::vector<model::DisruptionBudget> budgets;
  // Jobs (batch/v1 objects): how many retries the planner may use evicting their pods.
  std::vector<model::JobRetries> jobs;
  std::vector<ScenarioStep> steps;
};

// `source` names the file in errors ("scenario.yaml: step 3: ...").
Result<Scenario> ParseScenario(const codec::Json& root, const mig::GpuModelCatalog& catalog,
                               const std::string& source);
// Reads YAML or JSON from a file.
Result<Scenario> LoadScenarioFile(const std::string& path, const mig::GpuModelCatalog& catalog);
Result<Scenario> LoadScenarioText(const std::string& text, const mig::GpuModelCatalog& catalog,
                                  const std::string& source);

// The node a shorthand GPU list describes, registered as HAMi's agent would register it.
// Exposed for tests and for `tessera serve --cluster`.
Result<model::Node> ShorthandNode(const codec::Json& spec, const mig::GpuModelCatalog& catalog,
                                  const config::NvidiaConfig& config, const std::string& where);

// A deterministic GPU UUID for GPU `index` of `node` (FNV-1a, formatted like NVML's).
std::string SyntheticGpuUuid(const std::string& node, int index);

}  // namespace tessera::sim
