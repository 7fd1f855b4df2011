#include "app/defrag_controller.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <thread>

#include "core/sched/defrag_format.h"

namespace tessera::app {
namespace {

void LogLines(const std::string& text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) spdlog::info("defrag: {}", line);
}

// One round: a plan within what the hour leaves, carried out when it admits pending pods (or,
// with raise_placeability, when it moves pods to raise placeability).
void DefragRound(scheduler::SchedulerService& service, kube::Client& client,
                 const DefragControllerOptions& options, const std::atomic<bool>& stopping) {
  std::string why;
  if (!service.view.Ready(&why)) return;  // a follower, or not synced: another replica acts
  auto spent = EvictionsInTheLastHour(client);
  if (!spent.ok()) {
    spdlog::warn("defrag: counting the last hour's evictions: {}", spent.error().message);
    return;
  }
  sched::DefragLimits limits;
  limits.max_evictions =
      std::min(options.max_evictions, std::max(0, options.max_evictions_per_hour - *spent));
  limits.raise_placeability = options.raise_placeability;
  if (limits.max_evictions == 0) return;
  scheduler::DefragResult planned = service.reads.Defrag(limits, false);
  service.view.metrics().DefragPlanned(planned.plan);
  if (planned.plan.mode == sched::DefragPlan::Mode::kNothing) return;
  LogLines(sched::FormatDefragPlan(planned.plan, true));
  DefragExecution run;
  run.step_timeout = options.step_timeout;
  run.should_stop = [&stopping] { return stopping.load(); };
  std::ostringstream out;
  const DefragOutcome done = ExecuteDefragPlan(client, planned.plan, run, out);
  LogLines(out.str());
  service.view.metrics().DefragExecuted(done.evictions, done.admitted, done.stopped.empty());
  if (!done.stopped.empty()) spdlog::warn("defrag: {}", done.stopped);
}

}  // namespace

void RunDefragController(scheduler::SchedulerService& service, kube::Client& client,
                         const DefragControllerOptions& options,
                         const std::atomic<bool>& stopping) {
  spdlog::info(
      "defrag controller: a round every {} ms, at most {} evictions per plan and {} per "
      "hour{}",
      options.interval.count(), options.max_evictions, options.max_evictions_per_hour,
      options.raise_placeability ? ", raising placeability too" : "");
  while (!stopping.load()) {
    const auto next = std::chrono::steady_clock::now() + options.interval;
    while (!stopping.load() && std::chrono::steady_clock::now() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!stopping.load()) DefragRound(service, client, options, stopping);
  }
}

}  // namespace tessera::app
