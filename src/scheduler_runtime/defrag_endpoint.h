#pragma once

#include <mutex>

#include "adapters/http/http_message.h"
#include "scheduler/scheduler_service.h"

namespace tessera::scheduler_runtime {

// GET /defrag: a defragmentation plan for the cluster as the scheduler sees it, a dry run
// (docs/defrag.md). Query: format=text|json, max-evictions (0-32, default 4), min-gain (GiB,
// default 1), min-fragmentation-drop (GPUs, default 0.1); anything else is refused. One plan is
// made at a time: a second request meanwhile gets 429, so clients cannot stack searches.
class DefragEndpoint {
 public:
  explicit DefragEndpoint(scheduler::SchedulerService& service) : service_(service) {}
  http::Response Handle(const http::Request& request);

 private:
  scheduler::SchedulerService& service_;
  std::mutex planning_;
};

}  // namespace tessera::scheduler_runtime
