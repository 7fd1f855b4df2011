#pragma once

// Fault injection for the simulated NVML, configured by TESSERA_NVML_SIM_FAULTS: a comma list
// of rules, counted per process and per function (calls are numbered from 1):
//   fail:FUNCTION:N:CODE      the Nth call of FUNCTION returns CODE and changes nothing
//   fail:FUNCTION:*:CODE      every call does
//   abort-after:FUNCTION:N    the process aborts right after the Nth call took effect
// CODE is a number or an NVML name without the prefix (IN_USE, INSUFFICIENT_RESOURCES, ...).
// FUNCTION@GPU-UUID scopes a rule to one GPU: only that GPU's calls are counted and failed, so
// a test can break one GPU while the others work (for the calls that take a GPU handle:
// nvmlDeviceGetSupportedEventTypes, nvmlDeviceRegisterEvents).

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace tessera::nvml_sim {

struct FaultRule {
  enum class Kind { kFail, kAbortAfter } kind = Kind::kFail;
  std::string function;
  std::string gpu_uuid;  // "" = calls on any GPU
  long call = 0;         // 0 = every call
  int code = 0;
};

class FaultPlan {
 public:
  static Result<FaultPlan> Parse(std::string_view text);

  // Counts a call of `function` (on the GPU `gpu_uuid`, "" when it takes none); returns the
  // code to fail it with, or 0.
  int BeforeCall(const std::string& function, const std::string& gpu_uuid = "");
  // Whether the process must abort now that the current call of `function` took effect.
  bool AbortAfter(const std::string& function, const std::string& gpu_uuid = "") const;

 private:
  // Whether `rule` names this call: its function, its GPU if it names one, and its number.
  bool Matches(const FaultRule& rule, const std::string& function,
               const std::string& gpu_uuid) const;

  std::vector<FaultRule> rules_;
  std::map<std::string, long> calls_;  // by "FUNCTION" and by "FUNCTION@GPU-UUID"
};

int ParseNvmlCode(std::string_view text);  // -1 when unknown

}  // namespace tessera::nvml_sim
