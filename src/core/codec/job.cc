#include "core/codec/job.h"

#include <limits>
#include <string>

namespace tessera::codec {

namespace {

constexpr long long kMaxCount = std::numeric_limits<int32_t>::max();

// Whether a podFailurePolicy rule's onPodConditions match a pod an eviction failed: a
// DisruptionTarget condition whose status is "True" (the default when absent).
Result<bool> MatchesDisruption(const Json& rule, const std::string& where) {
  const Json* conditions = FindKey(rule, "onPodConditions");
  if (conditions == nullptr || conditions->is_null()) return false;
  if (!conditions->is_array()) return Error{where + ".onPodConditions: expected a list"};
  for (const Json& condition : *conditions) {
    if (!condition.is_object()) return Error{where + ".onPodConditions: expected objects"};
    std::string type;
    std::string status = "True";
    if (auto s = ReadString(condition, "type", where + ".onPodConditions", &type); !s) {
      return Error{s.message()};
    }
    if (auto s = ReadString(condition, "status", where + ".onPodConditions", &status); !s) {
      return Error{s.message()};
    }
    if (type == "DisruptionTarget" && status == "True") return true;
  }
  return false;
}

// The rules apply in order, the first that matches wins. An evicted pod matches a
// DisruptionTarget rule, and may match an exit-code rule first (its containers end on SIGTERM
// or SIGKILL), so only an Ignore before any other exit-code action makes the eviction free.
Result<bool> IgnoresDisruption(const Json& spec, const std::string& where) {
  const Json* policy = FindKey(spec, "podFailurePolicy");
  if (policy == nullptr || policy->is_null()) return false;
  if (!policy->is_object()) return Error{where + ".podFailurePolicy: expected an object"};
  const Json* rules = FindKey(*policy, "rules");
  if (rules == nullptr || rules->is_null()) return false;
  if (!rules->is_array()) return Error{where + ".podFailurePolicy.rules: expected a list"};
  for (const Json& rule : *rules) {
    const std::string at = where + ".podFailurePolicy.rules";
    if (!rule.is_object()) return Error{at + ": expected objects"};
    std::string action;
    if (auto s = ReadString(rule, "action", at, &action); !s) return Error{s.message()};
    const Json* exit_codes = FindKey(rule, "onExitCodes");
    if (exit_codes != nullptr && !exit_codes->is_null()) {
      if (action != "Ignore") return false;
      continue;
    }
    Result<bool> matches = MatchesDisruption(rule, at);
    if (!matches) return matches.error();
    if (*matches) return action == "Ignore";
  }
  return false;
}

Status ReadFinished(const Json& status, const std::string& where, bool* finished) {
  const Json* conditions = FindKey(status, "conditions");
  if (conditions == nullptr || conditions->is_null()) return Status::Ok();
  if (!conditions->is_array()) return Error{where + ".conditions: expected a list"};
  for (const Json& condition : *conditions) {
    if (!condition.is_object()) return Error{where + ".conditions: expected objects"};
    std::string type;
    std::string value;
    if (auto s = ReadString(condition, "type", where + ".conditions", &type); !s) return s;
    if (auto s = ReadString(condition, "status", where + ".conditions", &value); !s) return s;
    if ((type == "Complete" || type == "Failed") && value == "True") *finished = true;
  }
  return Status::Ok();
}

}  // namespace

Result<model::JobRetries> DecodeJob(const Json& j) {
  if (!j.is_object()) return Error{"Job: expected an object"};
  model::JobRetries job;
  const Json* meta = FindKey(j, "metadata");
  if (meta == nullptr || !meta->is_object()) return Error{"Job: metadata missing"};
  if (auto s = ReadString(*meta, "name", "Job.metadata", &job.name); !s) return Error{s.message()};
  if (job.name.empty()) return Error{"Job.metadata.name: missing"};
  if (auto s = ReadString(*meta, "namespace", "Job.metadata", &job.ns); !s) {
    return Error{s.message()};
  }
  if (job.ns.empty()) job.ns = "default";
  const std::string where = "Job " + job.Key();
  if (auto s = ReadString(*meta, "uid", where + ": metadata", &job.uid); !s) {
    return Error{s.message()};
  }
  if (const Json* spec = FindKey(j, "spec"); spec != nullptr && !spec->is_null()) {
    if (!spec->is_object()) return Error{where + ": spec: expected an object"};
    const std::string at = where + ": spec";
    if (auto s = ReadIntAs(*spec, "backoffLimit", at, 0, kMaxCount, &job.backoff_limit); !s) {
      return Error{s.message()};
    }
    const Json* per_index = FindKey(*spec, "backoffLimitPerIndex");
    job.per_index = per_index != nullptr && !per_index->is_null();
    Result<bool> ignores = IgnoresDisruption(*spec, at);
    if (!ignores) return ignores.error();
    job.ignores_disruption = *ignores;
  }
  if (const Json* status = FindKey(j, "status"); status != nullptr && !status->is_null()) {
    if (!status->is_object()) return Error{where + ": status: expected an object"};
    const std::string at = where + ": status";
    if (auto s = ReadIntAs(*status, "failed", at, 0, kMaxCount, &job.failed); !s) {
      return Error{s.message()};
    }
    if (auto s = ReadFinished(*status, at, &job.finished); !s) return Error{s.message()};
  }
  return job;
}

}  // namespace tessera::codec
