#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "adapters/kube/client.h"
#include "core/common/result.h"
#include "core/sched/defrag.h"

namespace tessera::app {

// Carrying out a defragmentation plan on a real cluster (`tessera defrag --execute`,
// docs/defrag.md). Every evicted pod is first annotated with the node its replacement belongs on
// (tessera.io/defrag-moving-to: tessera serve places the controller's next pod there when it
// fits). A plan that admits pending pods goes one admitted pod at a time, in the plan's order;
// a plan that raises placeability (mode b) one eviction at a time, each delivering when the
// replacement is bound on the planned node. For each admitted pod, the pending pod is
// nominated to the planned node (status.nominatedNodeName: tessera serve holds the room freed
// there for it, so neither another pod nor an evicted pod's replacement takes it), its evicted
// pods are evicted through the Eviction API (PodDisruptionBudgets honoured, uid preconditions),
// and the executor waits until the pod is bound and every evicted pod's controller has its pods
// bound again. A step delivers when the pod is bound on the planned node; the first that does
// not (refused eviction, a pod bound elsewhere, the timeout) stops the run. Events record every
// eviction and admission on the pods.
struct DefragExecution {
  std::chrono::milliseconds step_timeout{std::chrono::seconds(120)};
  std::chrono::milliseconds poll{250};
  // The evicted pods' grace period; none: each pod's own.
  std::optional<int64_t> grace_period_seconds;
  std::function<bool()> should_stop;  // checked while a step waits; may be empty
};

struct DefragOutcome {
  int evictions = 0;
  int admitted = 0;     // pending pods bound where planned
  int moved = 0;        // mode (b): evicted pods whose replacement is bound where planned
  std::string stopped;  // why the run stopped ("": every step delivered)
};

// The evictions tessera defrag recorded (Events with reason kDefragEvictedReason) in the last
// hour: what a per-hour limit counts.
inline constexpr const char* kDefragEvictedReason = "TesseraDefragEvicted";
inline constexpr const char* kDefragAdmittedReason = "TesseraDefragAdmitted";
Result<int> EvictionsInTheLastHour(kube::Client& client);

// Carries out `plan` and says what happened on `out`: the evictions made, pods admitted and
// moves delivered, and why it stopped if a step did not deliver.
DefragOutcome ExecuteDefragPlan(kube::Client& client, const sched::DefragPlan& plan,
                                const DefragExecution& options, std::ostream& out);

}  // namespace tessera::app
