#include "core/node/node_config.h"

namespace tessera::node {

using codec::Json;

NodeDeviceConfig FromDeviceConfig(const config::NvidiaConfig& nvidia) {
  NodeDeviceConfig c;
  c.device_split_count = nvidia.device_split_count;
  c.device_memory_scaling = nvidia.device_memory_scaling;
  c.device_core_scaling = nvidia.device_core_scaling;
  c.pre_configured_device_memory = nvidia.pre_configured_device_memory;
  c.enable_numa_topology = nvidia.enable_numa_topology;
  c.disable_core_limit = nvidia.disable_core_limit;
  c.resource_count_name = nvidia.resource_count_name;
  c.mig_profile_allowlist = nvidia.mig_profile_allowlist;
  c.lib_cuda_log_level = nvidia.lib_cuda_log_level;
  // The codec accepts only the known values.
  c.mig_fallback = ParseMigFallback(nvidia.mig_fallback).value_or(MigFallback::kNone);
  return c;
}

Result<NodeDeviceConfig> ApplyNodeConfig(NodeDeviceConfig base, const Json* node_config,
                                         const std::string& node_name) {
  if (node_config == nullptr) return base;
  const std::string what = "node config";
  const Json* list = codec::FindKey(*node_config, "nodeconfig");
  if (list == nullptr || list->is_null()) return base;
  if (!list->is_array()) return Error{what + ".nodeconfig: expected an array"};
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& e = (*list)[i];
    const std::string where = what + ".nodeconfig[" + std::to_string(i) + "]";
    if (!e.is_object()) return Error{where + ": expected an object"};
    std::string name;
    if (auto s = codec::ReadString(e, "name", where, &name); !s) return Error{s.message()};
    if (name != node_name) continue;
    std::string mode;
    if (auto s = codec::ReadString(e, "operatingmode", where, &mode); !s) return Error{s.message()};
    if (!mode.empty()) base.operating_mode = mode;
    std::string fallback;
    if (auto s = codec::ReadString(e, "migfallback", where, &fallback); !s) {
      return Error{s.message()};
    }
    if (!fallback.empty()) {
      auto parsed = ParseMigFallback(fallback);
      if (!parsed) {
        return Error{where + ".migfallback: \"" + fallback + "\" is not one of none, hami-core"};
      }
      base.mig_fallback = *parsed;
    }
    if (auto s = codec::ReadIntAs(e, "devicesplitcount", where, 1, 1000, &base.device_split_count);
        !s) {
      return Error{s.message()};
    }
    for (auto [key, field] :
         {std::pair<const char*, double*>{"devicememoryscaling", &base.device_memory_scaling},
          {"devicecorescaling", &base.device_core_scaling}}) {
      const Json* v = codec::FindKey(e, key);
      if (v == nullptr || v->is_null()) continue;
      if (!v->is_number() || v->get<double>() <= 0) {
        return Error{where + "." + key + ": expected a positive number"};
      }
      *field = v->get<double>();
    }
    if (auto s = codec::ReadIntAs(e, "preconfigureddevicememory", where, 0, 1 << 30,
                                  &base.pre_configured_device_memory);
        !s) {
      return Error{s.message()};
    }
    if (auto s = codec::ReadStringOrInteger(e, "libcudaloglevel", where, &base.lib_cuda_log_level);
        !s) {
      return Error{s.message()};
    }
    if (auto s = codec::ReadBool(e, "enablenumatopology", where, &base.enable_numa_topology); !s) {
      return Error{s.message()};
    }
    if (auto s =
            codec::ReadBool(e, "enablegetpreferredallocation", where, &base.preferred_allocation);
        !s) {
      return Error{s.message()};
    }
    if (const Json* f = codec::FindKey(e, "filterdevices"); f != nullptr && f->is_object()) {
      std::set<std::string> uuids;
      std::set<uint32_t> indexes;
      if (const Json* u = codec::FindKey(*f, "uuid"); u != nullptr && u->is_array()) {
        for (const auto& x : *u) {
          if (!x.is_string()) return Error{where + ".filterdevices.uuid: expected strings"};
          uuids.insert(x.get<std::string>());
        }
      }
      if (const Json* n = codec::FindKey(*f, "index"); n != nullptr && n->is_array()) {
        for (const auto& x : *n) {
          if (!x.is_number_unsigned())
            return Error{where + ".filterdevices.index: expected numbers"};
          indexes.insert(x.get<uint32_t>());
        }
      }
      if (!uuids.empty() || !indexes.empty()) {
        base.filter_uuids = std::move(uuids);
        base.filter_indexes = std::move(indexes);
      }
    }
  }
  return base;
}

}  // namespace tessera::node
