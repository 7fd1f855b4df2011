#include "core/model/disruption_budget.h"

#include <algorithm>

namespace tessera::model {

namespace {

bool Holds(const LabelRequirement& r, const std::map<std::string, std::string>& labels) {
  const auto it = labels.find(r.key);
  const bool has = it != labels.end();
  const bool listed =
      has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
  switch (r.op) {
    case LabelRequirement::Operator::kIn:
      return listed;
    case LabelRequirement::Operator::kNotIn:
      return !listed;  // a pod without the label matches too (Kubernetes' rule)
    case LabelRequirement::Operator::kExists:
      return has;
    case LabelRequirement::Operator::kDoesNotExist:
      return !has;
  }
  return false;
}

}  // namespace

bool DisruptionBudget::Selects(const std::string& pod_ns,
                               const std::map<std::string, std::string>& labels) const {
  if (no_selector || pod_ns != ns) return false;
  for (const auto& [key, value] : match_labels) {
    const auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return std::all_of(match_expressions.begin(), match_expressions.end(),
                     [&](const LabelRequirement& r) { return Holds(r, labels); });
}

}  // namespace tessera::model
