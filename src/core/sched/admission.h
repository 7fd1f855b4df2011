#pragma once

#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/config/scheduler_config.h"
#include "core/model/pod.h"
#include "core/sched/request.h"
#include "core/state/quota_book.h"

namespace tessera::sched {

// One change the admission step makes to a container's resources (for a JSON patch).
struct AdmissionChange {
  bool init = false;
  size_t container = 0;
  std::string resource;
  std::string value;
};

struct AdmissionOutcome {
  bool has_gpu = false;
  model::Pod pod;  // with the defaults applied
  std::vector<AdmissionChange> changes;
};

// What HAMi's mutating webhook does to a pod's GPU resources (hami-protocol.md 8): a missing
// count becomes defaultGPUNum when memory or cores are asked for; a count without cores becomes
// an exclusive card (cores 100) when no memory is asked for or the percentage is 100. Denials
// (privileged GPU containers, a percentage outside 0..100) are errors with the container named.
Result<AdmissionOutcome> ApplyAdmissionDefaults(const model::Pod& pod,
                                                const config::NvidiaConfig& config);

// The pod's quota use as HAMi's webhook counts it (hami-protocol.md 5.10): for memory and for
// cores, the larger of the app containers' sum and the largest init container, each container
// counting its per-GPU request times its GPU count. A memory percentage counts 0 (the GPU it is
// a share of is not known yet); the scheduler's filter counts it exactly.
state::QuotaUse AdmissionQuotaUse(const PodRequest& request);

}  // namespace tessera::sched
