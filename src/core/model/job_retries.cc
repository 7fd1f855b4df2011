#include "core/model/job_retries.h"

#include <algorithm>
#include <limits>

namespace tessera::model {

int32_t JobRetries::EvictionsAllowed() const {
  if (finished) return 0;
  if (ignores_disruption) return std::numeric_limits<int32_t>::max();
  if (per_index) return 0;
  return std::max(0, backoff_limit - failed - 1);
}

std::string JobRetries::WhyNoEviction() const {
  if (EvictionsAllowed() > 0) return "";
  if (finished) return "its Job " + Key() + " has finished";
  if (per_index) {
    return "its Job " + Key() +
           " counts failures per index (backoffLimitPerIndex) and its podFailurePolicy does not "
           "ignore evictions";
  }
  return "its Job " + Key() + " would be left without a retry (backoffLimit " +
         std::to_string(backoff_limit) + ", " + std::to_string(failed) +
         " failed) and its podFailurePolicy does not ignore evictions";
}

}  // namespace tessera::model
