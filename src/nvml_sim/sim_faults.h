#pragma once

// Fault injection for the simulated NVML, configured by TESSERA_NVML_SIM_FAULTS: a comma list
// of rules, counted per process and per function (calls are numbered from 1):
//   fail:FUNCTION:N:CODE      the Nth call of FUNCTION returns CODE and changes nothing
//   fail:FUNCTION:*:CODE      every call does
//   abort-after:FUNCTION:N    the process aborts right after the Nth call took effect
// CODE is a number or an NVML name without the prefix (IN_USE, INSUFFICIENT_RESOURCES, ...).

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace tessera::nvml_sim {

struct FaultRule {
  enum class Kind { kFail, kAbortAfter } kind = Kind::kFail;
  std::string function;
  long call = 0;  // 0 = every call
  int code = 0;
};

class FaultPlan {
 public:
  static Result<FaultPlan> Parse(std::string_view text);

  // Counts a call of `function`; returns the code to fail it with, or 0.
  int BeforeCall(const std::string& function);
  // Whether the process must abort now that the current call of `function` took effect.
  bool AbortAfter(const std::string& function) const;

 private:
  std::vector<FaultRule> rules_;
  std::map<std::string, long> calls_;
};

int ParseNvmlCode(std::string_view text);  // -1 when unknown

}  // namespace tessera::nvml_sim
