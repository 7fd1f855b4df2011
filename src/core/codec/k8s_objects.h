#pragma once

#include <string>

#include "core/codec/json_util.h"
#include "core/common/result.h"
#include "core/model/disruption_budget.h"
#include "core/model/pod.h"
#include "core/model/resource_quota.h"

namespace tessera::codec {

// v1.Pod / v1.Node JSON (as the API server, the extender and scenario files carry them) to the
// scheduler's model. Quantities may be JSON strings or numbers; errors name the field.
Result<model::Pod> DecodePod(const Json& j);
Result<model::Node> DecodeNode(const Json& j);
// v1.ResourceQuota: metadata and spec.hard (values as quantity text).
Result<model::ResourceQuota> DecodeResourceQuota(const Json& j);
// policy/v1 PodDisruptionBudget: metadata, spec.selector (matchLabels, matchExpressions) and
// status.disruptionsAllowed (absent: 0, as before the disruption controller has counted).
Result<model::DisruptionBudget> DecodePodDisruptionBudget(const Json& j);

}  // namespace tessera::codec
