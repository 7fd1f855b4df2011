#include "core/codec/node_register.h"

#include <limits>
#include <set>

#include "core/codec/json_util.h"

namespace tessera::codec {
namespace {

constexpr long long kInt32Max = std::numeric_limits<int32_t>::max();
constexpr long long kUint32Max = std::numeric_limits<uint32_t>::max();

Result<model::MigProfile> DecodeProfile(const Json& j, const std::string& where) {
  if (!j.is_object()) return Error{where + ": expected an object, got " + DescribeJsonValue(j)};
  model::MigProfile p;
  if (auto s = ReadString(j, "name", where, &p.name); !s) return Error{s.message()};
  if (auto s = ReadIntAs(j, "memoryMB", where, 0, kInt32Max, &p.memory_mib); !s) {
    return Error{s.message()};
  }
  if (auto s = ReadIntAs(j, "core", where, 0, 100, &p.core); !s) return Error{s.message()};
  if (auto s = ReadIntAs(j, "sliceCount", where, 0, kUint32Max, &p.slice_count); !s) {
    return Error{s.message()};
  }
  // Not in HAMi's wire format (json:"-" there); tessera's agent may add it, HAMi ignores it.
  if (auto s = ReadIntAs(j, "instanceCount", where, 0, kInt32Max, &p.max_count); !s) {
    return Error{s.message()};
  }
  if (p.name.empty()) return Error{where + ".name: missing"};
  if (const Json* pl = FindKey(j, "placements"); pl != nullptr && !pl->is_null()) {
    if (!pl->is_array()) return Error{where + ".placements: expected an array"};
    for (size_t i = 0; i < pl->size(); ++i) {
      std::string pw = where + ".placements[" + std::to_string(i) + "]";
      const Json& e = (*pl)[i];
      if (!e.is_object()) return Error{pw + ": expected an object"};
      model::Placement placement;
      if (auto s = ReadIntAs(e, "start", pw, 0, 31, &placement.start); !s) {
        return Error{s.message()};
      }
      if (auto s = ReadIntAs(e, "size", pw, 1, 32, &placement.size); !s) return Error{s.message()};
      if (placement.size == 0) return Error{pw + ".size: missing or zero"};
      if (placement.end() > 32) return Error{pw + ": placement ends beyond slice 32"};
      p.placements.push_back(placement);
    }
  }
  return p;
}

Result<model::GpuDevice> DecodeDevice(const Json& j, const std::string& where) {
  if (!j.is_object()) return Error{where + ": expected an object, got " + DescribeJsonValue(j)};
  model::GpuDevice d;
  if (auto s = ReadString(j, "id", where, &d.uuid); !s) return Error{s.message()};
  if (d.uuid.empty()) return Error{where + ".id: missing GPU UUID"};
  if (auto s = ReadIntAs(j, "index", where, 0, kUint32Max, &d.index); !s) return Error{s.message()};
  if (auto s = ReadIntAs(j, "count", where, 0, kInt32Max, &d.count); !s) return Error{s.message()};
  if (auto s = ReadIntAs(j, "devmem", where, 0, kInt32Max, &d.total_mem_mib); !s) {
    return Error{s.message()};
  }
  if (auto s = ReadIntAs(j, "devcore", where, 0, kInt32Max, &d.total_cores); !s) {
    return Error{s.message()};
  }
  if (auto s = ReadString(j, "type", where, &d.type); !s) return Error{s.message()};
  if (auto s = ReadIntAs(j, "numa", where, -1, kInt32Max, &d.numa); !s) return Error{s.message()};
  d.mode.clear();
  if (auto s = ReadString(j, "mode", where, &d.mode); !s) return Error{s.message()};
  if (d.mode.empty()) d.mode = "hami-core";
  if (auto s = ReadBool(j, "health", where, &d.healthy); !s) return Error{s.message()};
  if (const Json* profiles = FindKey(j, "migProfiles");
      profiles != nullptr && !profiles->is_null()) {
    if (!profiles->is_array()) return Error{where + ".migProfiles: expected an array"};
    std::set<std::string> names;
    for (size_t i = 0; i < profiles->size(); ++i) {
      auto p = DecodeProfile((*profiles)[i], where + ".migProfiles[" + std::to_string(i) + "]");
      if (!p.ok()) return p.error();
      if (!names.insert(p->name).second) {
        return Error{where + ".migProfiles[" + std::to_string(i) + "]: duplicate profile \"" +
                     p->name + "\""};
      }
      d.mig_profiles.push_back(std::move(p.value()));
    }
  }
  return d;
}

}  // namespace

Result<std::vector<model::GpuDevice>> DecodeNodeRegister(std::string_view text) {
  const std::string what = "annotation hami.io/node-nvidia-register";
  auto parsed = ParseJson(text, what);
  if (!parsed.ok()) return parsed.error();
  const Json& j = parsed.value();
  if (!j.is_array()) return Error{what + ": expected a JSON array of devices"};
  if (j.empty()) return Error{what + ": no gpu found on node"};
  std::vector<model::GpuDevice> devices;
  std::set<std::string> uuids;
  for (size_t i = 0; i < j.size(); ++i) {
    auto d = DecodeDevice(j[i], what + "[" + std::to_string(i) + "]");
    if (!d.ok()) return d.error();
    if (!uuids.insert(d->uuid).second) {
      return Error{what + "[" + std::to_string(i) + "].id: duplicate GPU UUID \"" + d->uuid + "\""};
    }
    devices.push_back(std::move(d.value()));
  }
  return devices;
}

std::string EncodeNodeRegister(const std::vector<model::GpuDevice>& devices) {
  // Go struct order with omitempty, as HAMi's MarshalNodeDevices writes it.
  std::string text = "[";
  for (size_t i = 0; i < devices.size(); ++i) {
    const auto& d = devices[i];
    nlohmann::ordered_json j;
    j["id"] = d.uuid;
    if (d.index != 0) j["index"] = d.index;
    if (d.count != 0) j["count"] = d.count;
    if (d.total_mem_mib != 0) j["devmem"] = d.total_mem_mib;
    if (d.total_cores != 0) j["devcore"] = d.total_cores;
    if (!d.type.empty()) j["type"] = d.type;
    if (d.numa != 0) j["numa"] = d.numa;
    if (!d.mode.empty()) j["mode"] = d.mode;
    if (!d.mig_profiles.empty()) {
      nlohmann::ordered_json profiles = nlohmann::ordered_json::array();
      for (const auto& p : d.mig_profiles) {
        nlohmann::ordered_json pj;
        pj["name"] = p.name;
        pj["memoryMB"] = p.memory_mib;
        pj["core"] = p.core;
        pj["sliceCount"] = p.slice_count;
        nlohmann::ordered_json placements = nlohmann::ordered_json::array();
        for (const auto& pl : p.placements) {
          placements.push_back({{"start", pl.start}, {"size", pl.size}});
        }
        pj["placements"] = placements;
        if (p.max_count > 0) pj["instanceCount"] = p.max_count;
        profiles.push_back(pj);
      }
      j["migProfiles"] = profiles;
    }
    if (d.healthy) j["health"] = true;
    if (i > 0) text += ",";
    text += j.dump();
  }
  text += "]";
  return text;
}

Result<model::PairScores> DecodePairScores(std::string_view text) {
  const std::string what = "annotation hami.io/node-nvidia-score";
  auto parsed = ParseJson(text, what);
  if (!parsed.ok()) return parsed.error();
  const Json& j = parsed.value();
  if (!j.is_array()) return Error{what + ": expected a JSON array"};
  model::PairScores scores;
  for (size_t i = 0; i < j.size(); ++i) {
    std::string where = what + "[" + std::to_string(i) + "]";
    std::string uuid;
    if (auto s = ReadString(j[i], "uuid", where, &uuid); !s) return Error{s.message()};
    if (uuid.empty()) return Error{where + ".uuid: missing"};
    auto& row = scores[uuid];
    const Json* score = FindKey(j[i], "score");
    if (score == nullptr || score->is_null()) continue;
    if (!score->is_object()) return Error{where + ".score: expected an object"};
    for (auto it = score->begin(); it != score->end(); ++it) {
      long long v = 0;
      if (auto s = ReadInt(*score, it.key(), where + ".score", -kInt32Max, kInt32Max, &v); !s) {
        return Error{s.message()};
      }
      row[it.key()] = static_cast<int32_t>(v);
    }
  }
  return scores;
}

std::string EncodePairScores(const model::PairScores& scores) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& [uuid, row] : scores) {
    nlohmann::ordered_json r = nlohmann::ordered_json::object();
    for (const auto& [other, v] : row) r[other] = v;
    out.push_back({{"uuid", uuid}, {"score", r}});
  }
  return out.dump();
}

}  // namespace tessera::codec
