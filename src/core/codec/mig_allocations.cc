#include "core/codec/mig_allocations.h"

#include <limits>
#include <set>
#include <utility>

#include "core/codec/json_util.h"

namespace tessera::codec {

std::string EncodeMigAllocations(const std::vector<MigAllocation>& allocations) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& a : allocations) {
    if (a.profile.empty() || a.placement.size == 0) continue;
    nlohmann::ordered_json j;
    j["containerIndex"] = a.container_index;
    j["deviceIndex"] = a.device_index;
    j["gpuUUID"] = a.gpu_uuid;
    j["profile"] = a.profile;
    j["placement"] = {{"start", a.placement.start}, {"size", a.placement.size}};
    if (a.runtime) {
      j["migUUID"] = a.runtime->mig_uuid;
      j["gpuInstanceID"] = a.runtime->gpu_instance_id;
      j["computeInstanceID"] = a.runtime->compute_instance_id;
    }
    out.push_back(j);
  }
  return out.empty() ? std::string() : out.dump();
}

Result<std::vector<MigAllocation>> DecodeMigAllocations(std::string_view text) {
  std::vector<MigAllocation> out;
  if (text.empty()) return out;
  const std::string what = "annotation hami.io/vgpu-mig-allocations";
  auto parsed = ParseJson(text, what);
  if (!parsed.ok()) return parsed.error();
  const Json& j = parsed.value();
  if (j.is_null()) return out;
  if (!j.is_array()) return Error{what + ": expected a JSON array"};
  std::set<std::pair<int, int>> seen;
  constexpr long long kIntMax = std::numeric_limits<int32_t>::max();
  constexpr long long kUintMax = std::numeric_limits<uint32_t>::max();
  for (size_t i = 0; i < j.size(); ++i) {
    std::string where = what + "[" + std::to_string(i) + "]";
    const Json& e = j[i];
    if (!e.is_object()) return Error{where + ": expected an object"};
    MigAllocation a;
    a.container_index = -1;
    a.device_index = -1;
    if (auto s = ReadIntAs(e, "containerIndex", where, 0, kIntMax, &a.container_index); !s) {
      return Error{s.message()};
    }
    if (auto s = ReadIntAs(e, "deviceIndex", where, 0, kIntMax, &a.device_index); !s) {
      return Error{s.message()};
    }
    if (auto s = ReadString(e, "gpuUUID", where, &a.gpu_uuid); !s) return Error{s.message()};
    if (auto s = ReadString(e, "profile", where, &a.profile); !s) return Error{s.message()};
    if (const Json* pl = FindKey(e, "placement"); pl != nullptr && !pl->is_null()) {
      if (!pl->is_object()) return Error{where + ".placement: expected an object"};
      if (auto s = ReadIntAs(*pl, "start", where + ".placement", 0, 31, &a.placement.start); !s) {
        return Error{s.message()};
      }
      if (auto s = ReadIntAs(*pl, "size", where + ".placement", 0, 32, &a.placement.size); !s) {
        return Error{s.message()};
      }
    }
    if (a.container_index < 0 || a.device_index < 0 || a.gpu_uuid.empty() || a.profile.empty() ||
        a.placement.size == 0) {
      return Error{"MIG allocation " + std::to_string(i) +
                   " is incomplete: needs containerIndex, deviceIndex, gpuUUID, profile and a "
                   "placement of non-zero size"};
    }
    const Json* mig_uuid = FindKey(e, "migUUID");
    const Json* gi = FindKey(e, "gpuInstanceID");
    const Json* ci = FindKey(e, "computeInstanceID");
    int present = (mig_uuid != nullptr && !mig_uuid->is_null()) +
                  (gi != nullptr && !gi->is_null()) + (ci != nullptr && !ci->is_null());
    if (present != 0 && present != 3) {
      return Error{"MIG allocation " + std::to_string(i) +
                   " has a partial runtime identity: migUUID, gpuInstanceID and "
                   "computeInstanceID must be all present or all absent"};
    }
    if (present == 3) {
      MigRuntimeIdentity rt;
      if (auto s = ReadString(e, "migUUID", where, &rt.mig_uuid); !s) return Error{s.message()};
      if (auto s = ReadIntAs(e, "gpuInstanceID", where, 0, kUintMax, &rt.gpu_instance_id); !s) {
        return Error{s.message()};
      }
      if (auto s = ReadIntAs(e, "computeInstanceID", where, 0, kUintMax, &rt.compute_instance_id);
          !s) {
        return Error{s.message()};
      }
      a.runtime = rt;
    }
    if (!seen.insert({a.container_index, a.device_index}).second) {
      return Error{"MIG allocation " + std::to_string(i) + " duplicates containerIndex " +
                   std::to_string(a.container_index) + ", deviceIndex " +
                   std::to_string(a.device_index)};
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace tessera::codec
