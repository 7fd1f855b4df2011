#pragma once

#include "core/model/pod.h"
#include "core/sched/decision.h"
#include "scheduler/cluster_writer.h"

namespace tessera::scheduler {

// The annotations a filter's placement writes to its pod (HAMi's keys), clearing what a previous
// placement of the pod may have left: written by filter, or carried to bind with
// --write-placement=bind.
AnnotationChanges PlacementAnnotations(const sched::Decision& decision);

// The same for a bind to write, clearing only the keys `pod` (as last seen) carries: a placement
// that removes nothing rides on the Binding alone, in one write.
AnnotationChanges PlacementAnnotationsFor(const sched::Decision& decision, const model::Pod& pod);

}  // namespace tessera::scheduler
