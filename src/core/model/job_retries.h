#pragma once

#include <cstdint>
#include <string>

namespace tessera::model {

// The label the Job controller puts on every pod of a Job (Kubernetes 1.27 and later): the uid
// of the Job that owns it.
inline constexpr const char* kJobControllerUidLabel = "batch.kubernetes.io/controller-uid";

// What an eviction costs a batch/v1 Job: an evicted pod counts as a failed one towards
// spec.backoffLimit (the Job fails once status.failed exceeds it), unless the Job's
// podFailurePolicy ignores pods that failed with the DisruptionTarget condition an eviction
// sets. With spec.backoffLimitPerIndex the failures are counted per index, which the Job's
// status does not give per pod.
struct JobRetries {
  std::string ns;
  std::string name;
  std::string uid;
  int32_t backoff_limit = 6;  // the API's default
  int32_t failed = 0;         // status.failed
  bool per_index = false;     // spec.backoffLimitPerIndex is set
  // spec.podFailurePolicy has an Ignore rule on the DisruptionTarget condition, and no
  // exit-code rule before it that an evicted container's exit code could match first.
  bool ignores_disruption = false;
  bool finished = false;  // a Complete or Failed condition: its pods are leaving anyway

  std::string Key() const { return ns + "/" + name; }

  // How many of its pods may be evicted: as many as wanted when evictions are ignored; else the
  // retries left with one kept for the Job's own failures (backoffLimit - failed - 1), and none
  // when the limit is per index or the Job has finished.
  int32_t EvictionsAllowed() const;

  // Why no eviction is allowed, for a plan's list of unmovable pods ("" when one is).
  std::string WhyNoEviction() const;
};

}  // namespace tessera::model
