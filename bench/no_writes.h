#pragma once

// A ClusterWriter that writes nothing and always succeeds: for benchmarks that feed a
// SchedulerService directly and measure the view, not the API server.

#include <string>

#include "scheduler/cluster_writer.h"

namespace tessera {

class NoWrites : public scheduler::ClusterWriter {
 public:
  Status PatchPodAnnotations(const scheduler::PodRef&,
                             const scheduler::AnnotationChanges&) override {
    return Status::Ok();
  }
  Status BindPod(const scheduler::PodRef&, const std::string&,
                 const scheduler::BindingAnnotations&) override {
    return Status::Ok();
  }
  void RecordEvent(const scheduler::PodRef&, bool, const std::string&,
                   const std::string&) override {}
  Status LockNode(const std::string&, const scheduler::PodRef&) override { return Status::Ok(); }
  Status UnlockNode(const std::string&, const scheduler::PodRef&) override { return Status::Ok(); }
};

}  // namespace tessera
