#include "nvml_sim/sim_faults.h"

#include <charconv>

#include "adapters/nvml/nvml_api.h"
#include "core/common/strings.h"

namespace tessera::nvml_sim {

int ParseNvmlCode(std::string_view text) {
  static const std::map<std::string, int, std::less<>> kCodes = {
      {"UNINITIALIZED", NVML_ERROR_UNINITIALIZED},
      {"INVALID_ARGUMENT", NVML_ERROR_INVALID_ARGUMENT},
      {"NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED},
      {"NO_PERMISSION", NVML_ERROR_NO_PERMISSION},
      {"NOT_FOUND", NVML_ERROR_NOT_FOUND},
      {"INSUFFICIENT_SIZE", NVML_ERROR_INSUFFICIENT_SIZE},
      {"TIMEOUT", NVML_ERROR_TIMEOUT},
      {"GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST},
      {"RESET_REQUIRED", NVML_ERROR_RESET_REQUIRED},
      {"IN_USE", NVML_ERROR_IN_USE},
      {"MEMORY", NVML_ERROR_MEMORY},
      {"NO_DATA", NVML_ERROR_NO_DATA},
      {"INSUFFICIENT_RESOURCES", NVML_ERROR_INSUFFICIENT_RESOURCES},
      {"NOT_READY", NVML_ERROR_NOT_READY},
      {"INVALID_STATE", NVML_ERROR_INVALID_STATE},
      {"UNKNOWN", NVML_ERROR_UNKNOWN},
  };
  std::string name = ToUpper(text);
  if (StartsWith(name, "NVML_ERROR_")) name = name.substr(11);
  if (auto it = kCodes.find(name); it != kCodes.end()) return it->second;
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && end == text.data() + text.size() && value > 0) return value;
  return -1;
}

Result<FaultPlan> FaultPlan::Parse(std::string_view text) {
  FaultPlan plan;
  for (const std::string& item : SplitTrimmed(text, ',')) {
    auto parts = SplitKeepEmpty(item, ':');
    const std::string where = "TESSERA_NVML_SIM_FAULTS rule \"" + item + "\"";
    FaultRule rule;
    if (parts.size() == 4 && parts[0] == "fail") {
      rule.kind = FaultRule::Kind::kFail;
      rule.code = ParseNvmlCode(parts[3]);
      if (rule.code <= 0) return Error{where + ": unknown NVML code \"" + parts[3] + "\""};
    } else if (parts.size() == 3 && parts[0] == "abort-after") {
      rule.kind = FaultRule::Kind::kAbortAfter;
    } else {
      return Error{where + ": expected fail:FUNCTION:N:CODE or abort-after:FUNCTION:N"};
    }
    rule.function = parts[1];
    if (const size_t at = rule.function.find('@'); at != std::string::npos) {
      rule.gpu_uuid = rule.function.substr(at + 1);
      rule.function.resize(at);
      if (rule.gpu_uuid.empty()) return Error{where + ": missing GPU UUID after @"};
    }
    if (rule.function.empty()) return Error{where + ": missing function name"};
    if (parts[2] != "*") {
      auto [end, ec] =
          std::from_chars(parts[2].data(), parts[2].data() + parts[2].size(), rule.call);
      if (ec != std::errc() || end != parts[2].data() + parts[2].size() || rule.call < 1) {
        return Error{where + ": call number must be 1 or more, or *"};
      }
    }
    plan.rules_.push_back(rule);
  }
  return plan;
}

bool FaultPlan::Matches(const FaultRule& rule, const std::string& function,
                        const std::string& gpu_uuid) const {
  if (rule.function != function) return false;
  if (!rule.gpu_uuid.empty() && rule.gpu_uuid != gpu_uuid) return false;
  const std::string counter = rule.gpu_uuid.empty() ? function : function + "@" + gpu_uuid;
  auto it = calls_.find(counter);
  const long n = it == calls_.end() ? 0 : it->second;
  return rule.call == 0 || rule.call == n;
}

int FaultPlan::BeforeCall(const std::string& function, const std::string& gpu_uuid) {
  ++calls_[function];
  if (!gpu_uuid.empty()) ++calls_[function + "@" + gpu_uuid];
  for (const auto& r : rules_) {
    if (r.kind == FaultRule::Kind::kFail && Matches(r, function, gpu_uuid)) return r.code;
  }
  return 0;
}

bool FaultPlan::AbortAfter(const std::string& function, const std::string& gpu_uuid) const {
  for (const auto& r : rules_) {
    if (r.kind == FaultRule::Kind::kAbortAfter && Matches(r, function, gpu_uuid)) return true;
  }
  return false;
}

}  // namespace tessera::nvml_sim
