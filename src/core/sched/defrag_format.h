#pragma once

#include <string>
#include <string_view>

#include "core/codec/json_util.h"
#include "core/sched/defrag.h"

namespace tessera::sched {

// A defragmentation plan for a person (`tessera defrag`) and for tools (`-o json`,
// docs/defrag.md).
// `to_execute`: the plan `tessera defrag --execute` is about to carry out.
std::string FormatDefragPlan(const DefragPlan& plan, bool to_execute = false);
// "admit-pending", "raise-placeability" or "nothing".
std::string_view DefragModeName(DefragPlan::Mode mode);
codec::Json DefragPlanToJson(const DefragPlan& plan);

}  // namespace tessera::sched
