#pragma once
// HAMi's Helm chart values (charts/hami/values.yaml, v2.10) turned into tessera's chart values
// (deploy/helm/tessera/values.yaml): `tessera migrate-values`. The mapping table is in
// docs/migrating-from-hami.md, "Carrying HAMi's chart values over".

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace tessera::adapters {

// A HAMi key whose setting tessera's values cannot carry, and why. `path` is dotted, with
// `[i]` for list items (`scheduler.kubeScheduler.extraArgs[0]`).
struct UnmappedHamiKey {
  std::string path;
  std::string reason;
};

struct HamiValuesMigration {
  // tessera's chart values: only the keys HAMi's file sets, in the order of tessera's
  // values.yaml.
  nlohmann::ordered_json values = nlohmann::ordered_json::object();
  // Sorted by path. A key whose value is empty (null, "", {} or []) sets nothing and is never
  // listed; a subtree whose `enabled` is false is a feature turned off and is not listed either.
  std::vector<UnmappedHamiKey> unmapped;
};

// Converts the text of a HAMi values file. An error (not YAML, not a mapping) names `what`.
Result<HamiValuesMigration> MigrateHamiValues(std::string_view hami_values_yaml,
                                              const std::string& what);

// Block YAML for a values tree; strings are double-quoted, so `"on"` or `"1"` stay strings.
std::string ValuesYaml(const nlohmann::ordered_json& values);

}  // namespace tessera::adapters
