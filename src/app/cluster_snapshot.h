#pragma once

#include <memory>
#include <string>
#include <vector>

#include "adapters/kube/client.h"
#include "core/codec/json_util.h"
#include "core/common/result.h"
#include "scheduler/scheduler_service.h"

namespace tessera::app {

// The items of a LIST answer, or an error naming what was listed.
Result<std::vector<codec::Json>> ListItems(kube::Client& client, const std::string& path);

// A real cluster as `tessera serve` would see it, listed once: nodes, the pods that have not
// finished, ResourceQuotas and (with `budgets`: what limits evictions) PodDisruptionBudgets and
// Jobs, fed to a scheduler service
// whose writer writes nothing. For the one-shot commands (explain, defrag): the same code as
// serve's /explain and /defrag, on a fresh view.
class ClusterSnapshot {
 public:
  static Result<std::unique_ptr<ClusterSnapshot>> List(kube::Client& client,
                                                       config::SchedulerConfig config,
                                                       scheduler::ServiceOptions options,
                                                       bool budgets);
  scheduler::SchedulerService& service() { return *service_; }

 private:
  ClusterSnapshot() = default;
  std::unique_ptr<scheduler::ClusterWriter> writer_;
  std::unique_ptr<scheduler::SchedulerService> service_;
};

}  // namespace tessera::app
