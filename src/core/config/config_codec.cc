#include "core/config/config_codec.h"

#include <cctype>
#include <limits>
#include <set>

#include "core/common/strings.h"

namespace tessera::config {
namespace {

using codec::Json;

Status ReadStringList(const Json& obj, std::string_view key, const std::string& where,
                      std::vector<std::string>* out) {
  const Json* v = codec::FindKey(obj, key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  std::string field = where + "." + std::string(key);
  if (!v->is_array()) return Error{field + ": expected a list of strings"};
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) {
      return Error{field + "[" + std::to_string(i) + "]: expected a string, got " + (*v)[i].dump()};
    }
    out->push_back((*v)[i].get<std::string>());
  }
  return Status::Ok();
}

Status ReadDouble(const Json& obj, std::string_view key, const std::string& where, double* out) {
  const Json* v = codec::FindKey(obj, key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_number()) {
    return Error{where + "." + std::string(key) + ": expected a number, got " + v->dump()};
  }
  *out = v->get<double>();
  if (*out <= 0) return Error{where + "." + std::string(key) + ": must be positive"};
  return Status::Ok();
}

Status DecodeNvidia(const Json& j, NvidiaConfig* c, std::vector<std::string>* warnings) {
  const std::string w = "nvidia";
  if (!j.is_object()) return Error{"nvidia: expected a mapping"};
  constexpr long long kMax = std::numeric_limits<int32_t>::max();
  static const std::set<std::string> kKnown = {
      "resourcecountname",   "resourcememoryname",   "resourcememorypercentagename",
      "resourcecorename",    "resourcepriorityname", "overwriteenv",
      "defaultmemory",       "defaultcores",         "defaultgpunum",
      "memoryfactor",        "disablecorelimit",     "gpucorepolicy",
      "runtimeclassname",    "migprofileallowlist",  "devicesplitcount",
      "devicememoryscaling", "devicecorescaling",    "preconfigureddevicememory",
      "libcudaloglevel",     "enablenumatopology",   "migfallback"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string lower;
    for (char ch : it.key())
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (kKnown.count(lower) == 0) warnings->push_back("ignoring unknown key nvidia." + it.key());
  }
  Status s;
  if (!(s = codec::ReadString(j, "resourceCountName", w, &c->resource_count_name))) return s;
  if (!(s = codec::ReadString(j, "resourceMemoryName", w, &c->resource_memory_name))) return s;
  if (!(s = codec::ReadString(j, "resourceMemoryPercentageName", w,
                              &c->resource_memory_percentage_name))) {
    return s;
  }
  if (!(s = codec::ReadString(j, "resourceCoreName", w, &c->resource_core_name))) return s;
  if (!(s = codec::ReadString(j, "resourcePriorityName", w, &c->resource_priority_name))) return s;
  if (!(s = codec::ReadBool(j, "overwriteEnv", w, &c->overwrite_env))) return s;
  if (!(s = codec::ReadIntAs(j, "defaultMemory", w, 0, kMax, &c->default_memory))) return s;
  if (!(s = codec::ReadIntAs(j, "defaultCores", w, 0, 100, &c->default_cores))) return s;
  if (!(s = codec::ReadIntAs(j, "defaultGPUNum", w, 0, kMax, &c->default_gpu_num))) return s;
  if (!(s = codec::ReadIntAs(j, "memoryFactor", w, 0, kMax, &c->memory_factor))) return s;
  if (!(s = codec::ReadBool(j, "disableCoreLimit", w, &c->disable_core_limit))) return s;
  if (!(s = codec::ReadString(j, "gpuCorePolicy", w, &c->gpu_core_policy))) return s;
  if (c->gpu_core_policy.empty()) c->gpu_core_policy = "default";
  if (c->gpu_core_policy != "default" && c->gpu_core_policy != "force" &&
      c->gpu_core_policy != "disable") {
    return Error{"nvidia.gpuCorePolicy: \"" + c->gpu_core_policy +
                 "\" is not one of default, force, disable"};
  }
  if (!(s = codec::ReadString(j, "runtimeClassName", w, &c->runtime_class_name))) return s;
  if (!(s = codec::ReadIntAs(j, "deviceSplitCount", w, 0, kMax, &c->device_split_count))) return s;
  if (!(s = ReadDouble(j, "deviceMemoryScaling", w, &c->device_memory_scaling))) return s;
  if (!(s = ReadDouble(j, "deviceCoreScaling", w, &c->device_core_scaling))) return s;
  if (!(s = codec::ReadIntAs(j, "preConfiguredDeviceMemory", w, 0, kMax,
                             &c->pre_configured_device_memory))) {
    return s;
  }
  if (!(s = codec::ReadBool(j, "enableNumaTopology", w, &c->enable_numa_topology))) return s;
  if (!(s = codec::ReadStringOrInteger(j, "libCudaLogLevel", w, &c->lib_cuda_log_level))) return s;
  if (!(s = codec::ReadString(j, "migFallback", w, &c->mig_fallback))) return s;
  if (c->mig_fallback != "none" && c->mig_fallback != "hami-core") {
    return Error{"nvidia.migFallback: \"" + c->mig_fallback + "\" is not one of none, hami-core"};
  }
  if (const Json* list = codec::FindKey(j, "migProfileAllowlist"); list && !list->is_null()) {
    if (!list->is_array()) return Error{"nvidia.migProfileAllowlist: expected a list"};
    for (size_t i = 0; i < list->size(); ++i) {
      std::string ew = "nvidia.migProfileAllowlist[" + std::to_string(i) + "]";
      if (!(*list)[i].is_object()) return Error{ew + ": expected a mapping"};
      MigAllowlistEntry e;
      if (!(s = ReadStringList((*list)[i], "models", ew, &e.models))) return s;
      if (!(s = ReadStringList((*list)[i], "profiles", ew, &e.profiles))) return s;
      c->mig_profile_allowlist.push_back(std::move(e));
    }
  }
  return ValidateMigAllowlist(c->mig_profile_allowlist);
}

}  // namespace

Result<SchedulerConfig> DecodeSchedulerConfig(const Json& root) {
  SchedulerConfig config;
  if (root.is_null()) return config;
  if (!root.is_object()) return Error{"device config: expected a mapping with an `nvidia` section"};
  static const std::set<std::string> kVendors = {
      "metax",     "hygon", "cambricon", "mthreads", "iluvatars", "enflame",  "kunlun",
      "awsneuron", "amd",   "vastai",    "biren",    "vnpus",     "iluvatar", "ascend"};
  for (auto it = root.begin(); it != root.end(); ++it) {
    // FindKey below reads the section case-insensitively; do not also call it ignored.
    if (EqualsIgnoreCase(it.key(), "nvidia")) continue;
    if (kVendors.count(it.key()) > 0) {
      config.warnings.push_back("ignoring device-config section \"" + it.key() +
                                "\": tessera schedules NVIDIA GPUs only");
    } else {
      config.warnings.push_back("ignoring unknown device-config section \"" + it.key() + "\"");
    }
  }
  if (const Json* nvidia = codec::FindKey(root, "nvidia"); nvidia && !nvidia->is_null()) {
    if (auto s = DecodeNvidia(*nvidia, &config.nvidia, &config.warnings); !s) {
      return Error{"device config: " + s.message()};
    }
  }
  return config;
}

}  // namespace tessera::config
