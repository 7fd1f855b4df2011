#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tessera::model {

// One requirement of a label selector's matchExpressions.
struct LabelRequirement {
  enum class Operator { kIn, kNotIn, kExists, kDoesNotExist };
  std::string key;
  Operator op = Operator::kIn;
  std::vector<std::string> values{};
};

// The parts of a policy/v1 PodDisruptionBudget preemption reads: which pods of its namespace its
// selector selects, and how many of them may still be disrupted (status.disruptionsAllowed).
struct DisruptionBudget {
  std::string ns;
  std::map<std::string, std::string> match_labels{};
  int32_t disruptions_allowed = 0;
  std::vector<LabelRequirement> match_expressions{};
  std::string name{};
  // spec.selector absent or null: the budget selects no pod. An empty selector ({}) selects
  // every pod of the namespace, as the API says.
  bool no_selector = false;

  std::string Key() const { return ns + "/" + name; }
  // Whether a pod of `pod_ns` with these labels is one the budget protects.
  bool Selects(const std::string& pod_ns, const std::map<std::string, std::string>& labels) const;
};

}  // namespace tessera::model
