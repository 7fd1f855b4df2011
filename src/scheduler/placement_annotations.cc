#include "scheduler/placement_annotations.h"

#include <string>

#include "core/model/annotations.h"

namespace tessera::scheduler {

namespace ann = model::annotations;

AnnotationChanges PlacementAnnotations(const sched::Decision& decision) {
  AnnotationChanges changes;
  for (const auto& [k, v] : decision.annotations) changes[k] = v;
  // A merge patch only sets keys: clear what a previous placement of this pod may have left
  // (HAMi leaves a stale MIG reservation behind, hami-protocol.md 13.5).
  const std::string mig(ann::kMigAllocations);
  if (changes.count(mig) == 0) changes[mig] = std::nullopt;
  changes[std::string(ann::kBindPhase)] = std::nullopt;
  changes[std::string(ann::kBindTime)] = std::nullopt;
  return changes;
}

AnnotationChanges PlacementAnnotationsFor(const sched::Decision& decision, const model::Pod& pod) {
  AnnotationChanges changes = PlacementAnnotations(decision);
  std::erase_if(changes, [&](const auto& change) {
    return !change.second && pod.annotations.count(change.first) == 0;
  });
  return changes;
}

}  // namespace tessera::scheduler
