#include "core/config/scheduler_config.h"

#include "core/common/strings.h"

namespace tessera::config {

const std::vector<std::string>* NvidiaConfig::AllowedProfiles(const std::string& type) const {
  std::string upper_type = ToUpper(type);
  for (const auto& entry : mig_profile_allowlist) {
    for (const auto& model : entry.models) {
      if (!model.empty() && upper_type.find(ToUpper(model)) != std::string::npos) {
        return &entry.profiles;
      }
    }
  }
  return nullptr;
}

Status ValidateMigAllowlist(const std::vector<MigAllowlistEntry>& allowlist) {
  for (size_t i = 0; i < allowlist.size(); ++i) {
    const auto& e = allowlist[i];
    std::string where = "nvidia.migProfileAllowlist[" + std::to_string(i) + "]";
    if (e.models.empty())
      return Error{"invalid MIG profile allowlist: " + where + ".models is empty"};
    if (e.profiles.empty()) {
      return Error{"invalid MIG profile allowlist: " + where + ".profiles is empty"};
    }
    for (const auto& p : e.profiles) {
      size_t dot = p.find('.');
      if (dot == std::string::npos || dot < 2 || p[dot - 1] != 'g') {
        return Error{"invalid MIG profile allowlist: " + where + ": profile \"" + p +
                     "\" is not of the form <N>g.<size> (e.g. 1g.5gb)"};
      }
    }
  }
  return Status::Ok();
}

}  // namespace tessera::config
