#pragma once

#include <string>

#include "core/codec/json_util.h"
#include "core/sched/defrag.h"

namespace tessera::sched {

// A defragmentation plan for a person (`tessera defrag`) and for tools (`-o json`,
// docs/defrag.md).
std::string FormatDefragPlan(const DefragPlan& plan);
codec::Json DefragPlanToJson(const DefragPlan& plan);

}  // namespace tessera::sched
