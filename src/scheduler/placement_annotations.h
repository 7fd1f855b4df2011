#pragma once

#include "core/sched/decision.h"
#include "scheduler/cluster_writer.h"

namespace tessera::scheduler {

// The annotations a filter's placement writes to its pod (HAMi's keys), clearing what a previous
// placement of the pod may have left: written by filter, or carried to bind with
// --write-placement=bind.
AnnotationChanges PlacementAnnotations(const sched::Decision& decision);

}  // namespace tessera::scheduler
