#include "core/codec/foreign_mig.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "core/codec/json_util.h"
#include "core/model/annotations.h"

namespace tessera::codec {

namespace {

bool AnnotationOrder(const ForeignMigInstance& a, const ForeignMigInstance& b) {
  return std::tie(a.gpu_uuid, a.placement.start, a.placement.size, a.profile, a.gpu_instance_id) <
         std::tie(b.gpu_uuid, b.placement.start, b.placement.size, b.profile, b.gpu_instance_id);
}

// A required string of bounded length.
Status ReadBoundedString(const Json& entry, std::string_view key, const std::string& where,
                         size_t max_length, std::string* out) {
  if (auto s = ReadString(entry, key, where, out); !s) return s;
  const std::string field = where + "." + std::string(key);
  if (out->empty()) return Error{field + ": missing or empty"};
  if (out->size() > max_length) {
    return Error{field + ": " + std::to_string(out->size()) + " characters, at most " +
                 std::to_string(max_length) + " allowed"};
  }
  return Status::Ok();
}

}  // namespace

std::vector<ForeignMigInstance> CanonicalForeignMigInstances(
    std::vector<ForeignMigInstance> instances, size_t* dropped) {
  std::sort(instances.begin(), instances.end(), AnnotationOrder);
  instances.erase(std::unique(instances.begin(), instances.end()), instances.end());
  const size_t over =
      instances.size() > kMaxForeignMigInstances ? instances.size() - kMaxForeignMigInstances : 0;
  instances.resize(instances.size() - over);
  if (dropped != nullptr) *dropped = over;
  return instances;
}

std::string EncodeForeignMigInstances(std::vector<ForeignMigInstance> instances) {
  instances = CanonicalForeignMigInstances(std::move(instances));
  if (instances.empty()) return {};
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& f : instances) {
    nlohmann::ordered_json j;
    j["gpu"] = f.gpu_uuid;
    j["profile"] = f.profile;
    j["start"] = f.placement.start;
    j["size"] = f.placement.size;
    j["gi"] = f.gpu_instance_id;
    out.push_back(std::move(j));
  }
  return out.dump();
}

Result<std::vector<ForeignMigInstance>> DecodeForeignMigInstances(std::string_view text,
                                                                  std::string_view node) {
  std::vector<ForeignMigInstance> out;
  if (text.empty()) return out;
  const std::string what = (node.empty() ? std::string() : "node " + std::string(node) + ": ") +
                           "annotation " + std::string(model::annotations::kForeignMigInstances);
  if (text.size() > kMaxForeignMigAnnotationBytes) {
    return Error{what + ": " + std::to_string(text.size()) + " bytes, at most " +
                 std::to_string(kMaxForeignMigAnnotationBytes) + " allowed"};
  }
  auto parsed = ParseJson(text, what);
  if (!parsed.ok()) return parsed.error();
  const Json& j = parsed.value();
  if (!j.is_array()) return Error{what + ": expected a JSON array, got " + DescribeJsonValue(j)};
  if (j.size() > kMaxForeignMigInstances) {
    return Error{what + ": " + std::to_string(j.size()) + " instances, at most " +
                 std::to_string(kMaxForeignMigInstances) + " allowed"};
  }
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string where = what + "[" + std::to_string(i) + "]";
    const Json& e = j[i];
    if (!e.is_object()) return Error{where + ": expected an object, got " + DescribeJsonValue(e)};
    ForeignMigInstance f;
    if (auto s = ReadBoundedString(e, "gpu", where, kMaxForeignGpuUuidLength, &f.gpu_uuid); !s) {
      return Error{s.message()};
    }
    if (auto s = ReadBoundedString(e, "profile", where, kMaxForeignProfileLength, &f.profile); !s) {
      return Error{s.message()};
    }
    // Memory slices are bits of a 32-bit mask (mig::Layout): start 0-31, size 1-32, inside it.
    long long start = -1;
    long long size = -1;
    if (auto s = ReadInt(e, "start", where, 0, 31, &start); !s) return Error{s.message()};
    if (auto s = ReadInt(e, "size", where, 1, 32, &size); !s) return Error{s.message()};
    if (start < 0) return Error{where + ".start: missing"};
    if (size < 0) return Error{where + ".size: missing"};
    if (start + size > 32) {
      return Error{where + ".size: slices " + std::to_string(start) + " to " +
                   std::to_string(start + size - 1) + " go past slice 31"};
    }
    f.placement = {static_cast<uint32_t>(start), static_cast<uint32_t>(size)};
    if (auto s = ReadIntAs(e, "gi", where, 0, 0xFFFFFFFFLL, &f.gpu_instance_id); !s) {
      return Error{s.message()};
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace tessera::codec
