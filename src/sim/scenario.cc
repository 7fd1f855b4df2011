#include "sim/scenario.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "adapters/yaml/yaml_json.h"
#include "core/codec/job.h"
#include "core/codec/k8s_objects.h"
#include "core/codec/node_register.h"
#include "core/config/config_codec.h"
#include "core/model/annotations.h"
#include "core/state/quota_book.h"

namespace tessera::sim {
namespace {

using codec::Json;

std::string PickType(const mig::GpuModelSpec& spec) {
  for (const auto& a : spec.aliases) {
    if (a.rfind("NVIDIA ", 0) == 0) return a;
  }
  return "NVIDIA-" + spec.model;
}

Result<std::vector<model::GpuDevice>> ShorthandGpus(const Json& gpu, const std::string& node,
                                                    int first_index,
                                                    const mig::GpuModelCatalog& catalog,
                                                    const config::NvidiaConfig& config,
                                                    const std::string& where) {
  if (!gpu.is_object()) return Error{where + ": expected a mapping"};
  std::string model_name;
  std::string mode = "hami-core";
  std::string uuid;
  if (auto s = codec::ReadString(gpu, "model", where, &model_name); !s) return Error{s.message()};
  if (auto s = codec::ReadString(gpu, "mode", where, &mode); !s) return Error{s.message()};
  if (mode != "hami-core" && mode != "mig" && mode != "mps") {
    return Error{where + ".mode: \"" + mode + "\" is not one of hami-core, mig, mps"};
  }
  if (auto s = codec::ReadString(gpu, "uuid", where, &uuid); !s) return Error{s.message()};
  int replicas = 1;
  if (auto s = codec::ReadIntAs(gpu, "replicas", where, 1, 64, &replicas); !s) {
    return Error{s.message()};
  }
  if (!uuid.empty() && replicas > 1) return Error{where + ".uuid: cannot be set with replicas > 1"};
  const mig::GpuModelSpec* spec = catalog.Find(model_name);
  if (spec == nullptr && !model_name.empty() && mode == "mig") {
    return Error{where + ".model: unknown GPU model \"" + model_name +
                 "\" (MIG needs a model from the built-in table; see `tessera models`)"};
  }
  if (model_name.empty()) return Error{where + ".model: missing"};
  if (mode == "mig" && !spec->complete) {
    return Error{where + ".model: \"" + model_name +
                 "\" has no verified MIG placements in the built-in table"};
  }
  model::GpuDevice d;
  d.type = spec != nullptr
               ? PickType(*spec)
               : (model_name.rfind("NVIDIA", 0) == 0 ? model_name : "NVIDIA-" + model_name);
  d.mode = mode;
  d.healthy = true;
  d.total_cores = static_cast<int32_t>(100 * (mode == "mig" ? 1.0 : config.device_core_scaling));
  if (spec != nullptr) {
    double scaling = mode == "mig" ? 1.0 : config.device_memory_scaling;
    d.total_mem_mib = static_cast<int32_t>(spec->memory_mib * scaling);
  }
  d.count = config.device_split_count;
  if (mode == "mig") {
    const std::vector<std::string>* allow = config.AllowedProfiles(d.type);
    std::vector<std::string> wanted;
    if (auto s = [&]() -> Status {
          const Json* list = codec::FindKey(gpu, "profiles");
          if (list == nullptr || list->is_null()) return Status::Ok();
          if (!list->is_array()) return Error{where + ".profiles: expected a list of names"};
          for (const auto& p : *list) {
            if (!p.is_string()) return Error{where + ".profiles: expected a list of names"};
            wanted.push_back(p.get<std::string>());
          }
          return Status::Ok();
        }();
        !s) {
      return Error{s.message()};
    }
    for (const auto& w : wanted) {
      bool known = std::any_of(spec->profiles.begin(), spec->profiles.end(),
                               [&](const model::MigProfile& p) { return p.name == w; });
      if (!known)
        return Error{where + ".profiles: \"" + w + "\" is not a profile of " + spec->model};
    }
    int32_t max_count = 0;
    for (const auto& p : spec->profiles) {
      bool in_allow =
          allow == nullptr || std::find(allow->begin(), allow->end(), p.name) != allow->end();
      bool in_wanted =
          wanted.empty() || std::find(wanted.begin(), wanted.end(), p.name) != wanted.end();
      if (!in_allow || !in_wanted) continue;
      d.mig_profiles.push_back(p);
      max_count = std::max(max_count, p.EffectiveMaxCount());
    }
    if (d.mig_profiles.empty()) {
      return Error{where + ": no MIG profile of " + spec->model + " is allowed by the config"};
    }
    d.count = max_count;  // as HAMi's agent publishes it
  }
  constexpr long long kMax = std::numeric_limits<int32_t>::max();
  if (auto s = codec::ReadIntAs(gpu, "count", where, 1, kMax, &d.count); !s)
    return Error{s.message()};
  if (auto s = codec::ReadIntAs(gpu, "memoryMiB", where, 1, kMax, &d.total_mem_mib); !s) {
    return Error{s.message()};
  }
  if (auto s = codec::ReadIntAs(gpu, "cores", where, 1, kMax, &d.total_cores); !s) {
    return Error{s.message()};
  }
  if (auto s = codec::ReadIntAs(gpu, "numa", where, 0, kMax, &d.numa); !s)
    return Error{s.message()};
  if (auto s = codec::ReadBool(gpu, "health", where, &d.healthy); !s) return Error{s.message()};
  if (d.total_mem_mib == 0) {
    return Error{where + ".memoryMiB: required for a model the built-in table does not know"};
  }
  std::vector<model::GpuDevice> out;
  for (int r = 0; r < replicas; ++r) {
    model::GpuDevice copy = d;
    copy.index = static_cast<uint32_t>(first_index + r);
    if (auto s = codec::ReadIntAs(gpu, "index", where, 0, kMax, &copy.index); !s) {
      return Error{s.message()};
    }
    if (replicas > 1) copy.index = static_cast<uint32_t>(first_index + r);
    copy.uuid = uuid.empty() ? SyntheticGpuUuid(node, first_index + r) : uuid;
    out.push_back(std::move(copy));
  }
  return out;
}

}  // namespace

std::string SyntheticGpuUuid(const std::string& node, int index) {
  // FNV-1a of "node/index", then a splitmix64 finaliser so that neighbours differ everywhere.
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : node + "/" + std::to_string(index)) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  uint64_t a = mix(h);
  uint64_t b = mix(a);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "GPU-%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
                static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

Result<model::Node> ShorthandNode(const Json& spec, const mig::GpuModelCatalog& catalog,
                                  const config::NvidiaConfig& config, const std::string& where) {
  model::Node node;
  if (auto s = codec::ReadString(spec, "name", where, &node.name); !s) return Error{s.message()};
  if (node.name.empty()) return Error{where + ".name: missing"};
  const Json* gpus = codec::FindKey(spec, "gpus");
  if (gpus == nullptr || !gpus->is_array() || gpus->empty()) {
    return Error{where + ".gpus: expected a non-empty list"};
  }
  std::vector<model::GpuDevice> devices;
  for (size_t i = 0; i < gpus->size(); ++i) {
    auto d = ShorthandGpus((*gpus)[i], node.name, static_cast<int>(devices.size()), catalog, config,
                           where + ".gpus[" + std::to_string(i) + "]");
    if (!d.ok()) return d.error();
    for (auto& g : d.value()) devices.push_back(std::move(g));
  }
  node.annotations[std::string(model::annotations::kNodeRegister)] =
      codec::EncodeNodeRegister(devices);
  if (const Json* ann = codec::FindKey(spec, "annotations"); ann && ann->is_object()) {
    for (auto it = ann->begin(); it != ann->end(); ++it) {
      if (!it.value().is_string()) {
        return Error{where + ".annotations[\"" + it.key() + "\"]: expected a string"};
      }
      node.annotations[it.key()] = it.value().get<std::string>();
    }
  }
  if (const Json* alloc = codec::FindKey(spec, "allocatable"); alloc && !alloc->is_null()) {
    if (!alloc->is_object()) return Error{where + ".allocatable: expected a mapping"};
    for (auto it = alloc->begin(); it != alloc->end(); ++it) {
      if (it.value().is_string()) {
        node.allocatable[it.key()] = it.value().get<std::string>();
      } else if (it.value().is_number()) {
        node.allocatable[it.key()] = it.value().dump();
      } else {
        return Error{where + ".allocatable[\"" + it.key() + "\"]: expected a quantity"};
      }
    }
  }
  return node;
}

Result<Scenario> ParseScenario(const Json& root, const mig::GpuModelCatalog& catalog,
                               const std::string& source) {
  Scenario sc;
  if (!root.is_object()) return Error{source + ": expected a mapping with nodes and steps"};
  if (const Json* cfg = codec::FindKey(root, "config"); cfg && !cfg->is_null()) {
    auto config = config::DecodeSchedulerConfig(*cfg);
    if (!config.ok()) return Error{source + ": config: " + config.error().message};
    sc.config = std::move(config.value());
  }
  if (const Json* policy = codec::FindKey(root, "policy"); policy && !policy->is_null()) {
    std::string node_policy = "tessera";
    std::string gpu_policy = "tessera";
    if (auto s = codec::ReadString(*policy, "node", source + ": policy", &node_policy); !s) {
      return Error{s.message()};
    }
    if (auto s = codec::ReadString(*policy, "gpu", source + ": policy", &gpu_policy); !s) {
      return Error{s.message()};
    }
    // policy.define: operators' node policies, as `serve --define-node-policy` takes them.
    std::vector<std::string> definitions;
    if (const Json* define = codec::FindKey(*policy, "define"); define && !define->is_null()) {
      if (!define->is_array()) {
        return Error{source + ": policy.define: expected a list of NAME=PLUGIN:WEIGHT,..."};
      }
      for (size_t i = 0; i < define->size(); ++i) {
        if (!(*define)[i].is_string()) {
          return Error{source + ": policy.define[" + std::to_string(i) + "]: expected a string"};
        }
        definitions.push_back((*define)[i].get<std::string>());
      }
    }
    auto defined = sched::ParseNodePolicyDefinitions(definitions);
    if (!defined.ok()) return Error{source + ": policy.define: " + defined.error().message};
    sc.policy.defined_node_policies = std::move(defined.value());
    auto np = sched::ParseNodePolicy(node_policy, sc.policy.defined_node_policies);
    if (!np.ok()) return Error{source + ": policy.node: " + np.error().message};
    auto gp = sched::ParseGpuPolicy(gpu_policy);
    if (!gp.ok()) return Error{source + ": policy.gpu: " + gp.error().message};
    sc.policy.node = *np;
    sc.policy.gpu = gpu_policy;
    std::string prior_text;
    long long strength = 8;
    if (auto s = codec::ReadString(*policy, "migDemandPrior", source + ": policy", &prior_text);
        !s) {
      return Error{s.message()};
    }
    if (auto s =
            codec::ReadInt(*policy, "migPriorStrength", source + ": policy", 0, 1000000, &strength);
        !s) {
      return Error{s.message()};
    }
    auto prior = sched::ParseMigPrior(prior_text, static_cast<double>(strength));
    if (!prior.ok()) return Error{source + ": policy.migDemandPrior: " + prior.error().message};
    sc.policy.mig_prior = std::move(prior.value());
    if (auto s = codec::ReadBool(*policy, "migAllowLargerProfile", source + ": policy",
                                 &sc.policy.mig_allow_larger_profiles);
        !s) {
      return Error{s.message()};
    }
  }
  const Json* nodes = codec::FindKey(root, "nodes");
  if (nodes == nullptr || !nodes->is_array()) return Error{source + ": nodes: expected a list"};
  for (size_t i = 0; i < nodes->size(); ++i) {
    const Json& n = (*nodes)[i];
    std::string where = source + ": nodes[" + std::to_string(i) + "]";
    if (const Json* obj = codec::FindKey(n, "node"); obj != nullptr) {
      auto node = codec::DecodeNode(*obj);
      if (!node.ok()) return Error{where + ": " + node.error().message};
      sc.nodes.push_back(std::move(node.value()));
      continue;
    }
    auto node = ShorthandNode(n, catalog, sc.config.nvidia, where);
    if (!node.ok()) return node.error();
    sc.nodes.push_back(std::move(node.value()));
  }
  for (size_t i = 0; i + 1 < sc.nodes.size(); ++i) {
    for (size_t j = i + 1; j < sc.nodes.size(); ++j) {
      if (sc.nodes[i].name == sc.nodes[j].name) {
        return Error{source + ": nodes[" + std::to_string(j) + "]: duplicate node name \"" +
                     sc.nodes[j].name + "\""};
      }
    }
  }
  if (const Json* quotas = codec::FindKey(root, "quotas"); quotas && !quotas->is_null()) {
    if (!quotas->is_array()) return Error{source + ": quotas: expected a list"};
    state::QuotaBook check(sc.config.nvidia);
    for (size_t i = 0; i < quotas->size(); ++i) {
      const Json& q = (*quotas)[i];
      const std::string where = source + ": quotas[" + std::to_string(i) + "]";
      if (!q.is_object()) return Error{where + ": expected a mapping"};
      Json object = q;
      if (codec::FindKey(q, "metadata") == nullptr) {
        // Shorthand: {namespace, name, hard}.
        std::string ns = "default";
        std::string name = "gpu-quota-" + std::to_string(i);
        if (auto s = codec::ReadString(q, "namespace", where, &ns); !s) return Error{s.message()};
        if (auto s = codec::ReadString(q, "name", where, &name); !s) return Error{s.message()};
        const Json* hard = codec::FindKey(q, "hard");
        object = Json{{"metadata", {{"name", name}, {"namespace", ns}}},
                      {"spec", {{"hard", hard != nullptr ? *hard : Json::object()}}}};
      }
      auto quota = codec::DecodeResourceQuota(object);
      if (!quota.ok()) return Error{where + ": " + quota.error().message};
      if (auto problems = check.Upsert(*quota); !problems.empty()) {
        return Error{where + ": " + problems.front()};
      }
      sc.quotas.push_back(std::move(quota.value()));
    }
  }
  if (const Json* budgets = codec::FindKey(root, "disruptionBudgets");
      budgets != nullptr && !budgets->is_null()) {
    if (!budgets->is_array()) return Error{source + ": disruptionBudgets: expected a list"};
    for (size_t i = 0; i < budgets->size(); ++i) {
      const std::string where = source + ": disruptionBudgets[" + std::to_string(i) + "]";
      auto budget = codec::DecodePodDisruptionBudget((*budgets)[i]);
      if (!budget.ok()) return Error{where + ": " + budget.error().message};
      sc.budgets.push_back(std::move(budget.value()));
    }
  }
  if (const Json* jobs = codec::FindKey(root, "jobs"); jobs != nullptr && !jobs->is_null()) {
    if (!jobs->is_array()) return Error{source + ": jobs: expected a list"};
    for (size_t i = 0; i < jobs->size(); ++i) {
      auto job = codec::DecodeJob((*jobs)[i]);
      if (!job.ok()) {
        return Error{source + ": jobs[" + std::to_string(i) + "]: " + job.error().message};
      }
      sc.jobs.push_back(std::move(job.value()));
    }
  }
  const Json* steps = codec::FindKey(root, "steps");
  if (steps != nullptr && !steps->is_null()) {
    if (!steps->is_array()) return Error{source + ": steps: expected a list"};
    for (size_t i = 0; i < steps->size(); ++i) {
      const Json& st = (*steps)[i];
      std::string where = source + ": step " + std::to_string(i + 1);
      ScenarioStep step;
      if (const Json* create = codec::FindKey(st, "create"); create != nullptr) {
        auto pod = codec::DecodePod(*create);
        if (!pod.ok()) return Error{where + ": create: " + pod.error().message};
        step.kind = ScenarioStep::Kind::kCreate;
        step.pod = std::move(pod.value());
      } else if (const Json* del = codec::FindKey(st, "delete"); del != nullptr) {
        if (!del->is_string() || del->get<std::string>().empty()) {
          return Error{where + ": delete: expected \"namespace/name\""};
        }
        step.kind = ScenarioStep::Kind::kDelete;
        step.pod_key = del->get<std::string>();
        if (step.pod_key.find('/') == std::string::npos) step.pod_key = "default/" + step.pod_key;
      } else if (const Json* node = codec::FindKey(st, "node"); node != nullptr) {
        // A Node object, or the shorthand of `nodes:`.
        auto decoded = codec::FindKey(*node, "metadata") != nullptr
                           ? codec::DecodeNode(*node)
                           : ShorthandNode(*node, catalog, sc.config.nvidia, where + ": node");
        if (!decoded.ok()) return Error{where + ": node: " + decoded.error().message};
        step.kind = ScenarioStep::Kind::kNode;
        step.node = std::move(decoded.value());
      } else {
        return Error{where + ": expected `create:`, `delete:` or `node:`"};
      }
      sc.steps.push_back(std::move(step));
    }
  }
  return sc;
}

Result<Scenario> LoadScenarioText(const std::string& text, const mig::GpuModelCatalog& catalog,
                                  const std::string& source) {
  auto json = adapters::ParseYaml(text, source);
  if (!json.ok()) return json.error();
  return ParseScenario(json.value(), catalog, source);
}

Result<Scenario> LoadScenarioFile(const std::string& path, const mig::GpuModelCatalog& catalog) {
  auto text = adapters::ReadFile(path);
  if (!text.ok()) return text.error();
  return LoadScenarioText(text.value(), catalog, path);
}

}  // namespace tessera::sim
