#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "scheduler/cluster_view.h"
#include "scheduler/cluster_writer.h"

namespace tessera::scheduler {

// kube-scheduler's extender verbs and the mutating webhook over the cluster view: request bodies
// in, answer bodies out; errors travel in the protocol's Error fields. Bodies are decoded and
// encoded, and the cluster written, outside the view's lock; a failed write undoes its
// reservation. Thread-safe, as the view is.
class ExtenderVerbs {
 public:
  ExtenderVerbs(ClusterView& view, ClusterWriter& writer) : view_(view), writer_(writer) {}

  std::string Filter(std::string_view body);
  std::string Bind(std::string_view body);
  std::string Prioritize(std::string_view body);
  std::string Webhook(std::string_view body);

  // Preempt's answer (extender_preempt.cc): an ExtenderPreemptionResult, or why there is none.
  // The protocol has no Error field, so a failure must reach kube-scheduler as a failed call:
  // `error` set, `bad_request` when the body is at fault (else the service is not ready).
  struct PreemptAnswer {
    std::string body;
    std::string error;
    bool bad_request = false;
  };
  PreemptAnswer Preempt(std::string_view body);

  // A filter or prioritize request may name at most this many candidate nodes (NodeNames or
  // Nodes.items): twice the nodes the cluster view knows (kube-scheduler's view may be ahead of
  // ours), and never fewer than kMinCandidateLimit. Longer lists are refused before any work.
  static constexpr size_t kMinCandidateLimit = 1000;
  size_t candidate_limit() const;
  // The body size this thread's request decoder keeps buffers for (see ExtenderArgsDecoder).
  static size_t DecodeBuffersRetainedOnThisThread();

 private:
  ClusterView& view_;
  ClusterWriter& writer_;
};

}  // namespace tessera::scheduler
