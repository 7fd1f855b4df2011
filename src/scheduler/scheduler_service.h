#pragma once

#include <utility>

#include "scheduler/cluster_view.h"
#include "scheduler/extender_verbs.h"
#include "scheduler/housekeeping.h"
#include "scheduler/read_views.h"

namespace tessera::scheduler {

// The scheduler as `tessera serve` wires it: the cluster view and its three front ends over one
// ClusterWriter, built together so that the front ends never outlive the view. Callers that
// need one part take that part (the cluster sources take the view, serve's periodic loop the
// housekeeping).
struct SchedulerService {
  SchedulerService(config::SchedulerConfig config, ServiceOptions options, ClusterWriter& writer,
                   ServiceClocks clocks = {})
      : view(std::move(config), std::move(options), writer, std::move(clocks)),
        verbs(view, writer),
        housekeeping(view, writer),
        reads(view) {}
  SchedulerService(const SchedulerService&) = delete;
  SchedulerService& operator=(const SchedulerService&) = delete;

  ClusterView view;
  ExtenderVerbs verbs;
  Housekeeping housekeeping;
  ReadViews reads;
};

}  // namespace tessera::scheduler
