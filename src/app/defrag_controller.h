#pragma once

#include <atomic>
#include <chrono>

#include "adapters/kube/client.h"
#include "app/defrag_execute.h"
#include "scheduler/scheduler_service.h"

namespace tessera::app {

// The opt-in controller mode of `tessera serve` (--defrag-interval, docs/defrag.md): every
// interval, on the leader with a synced view, a plan on the scheduler's own view (as GET /defrag
// makes it), carried out as `tessera defrag --execute` carries one out, within the same limits
// per plan and per hour.
struct DefragControllerOptions {
  std::chrono::milliseconds interval{0};  // 0: off
  int max_evictions = 4;                  // per plan
  int max_evictions_per_hour = 6;         // counted from the Events of every run
  std::chrono::milliseconds step_timeout{std::chrono::seconds(120)};
  // Also carry out mode (b) plans: with nothing pending, moves that raise placeability.
  bool raise_placeability = false;
};

// Runs until `stopping` is set (checked at least every 100 ms, and by a step's wait).
void RunDefragController(scheduler::SchedulerService& service, kube::Client& client,
                         const DefragControllerOptions& options, const std::atomic<bool>& stopping);

}  // namespace tessera::app
