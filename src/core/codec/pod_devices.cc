#include "core/codec/pod_devices.h"

#include <algorithm>

#include <limits>

#include "core/common/strings.h"

namespace tessera::codec {

std::string EncodePodDevices(const PodDevices& devices) {
  std::string out;
  for (const auto& container : devices) {
    for (const auto& d : container) {
      out += d.uuid + "," + d.type + "," + std::to_string(d.used_mem) + "," +
             std::to_string(d.used_cores) + ":";
    }
    out += ";";
  }
  return out;
}

Result<PodDevices> DecodePodDevices(std::string_view text) {
  PodDevices pod;
  if (text.empty()) return pod;
  auto slots = SplitKeepEmpty(text, ';');
  // Every slot is terminated by ';', so the piece after the last one is not a slot.
  if (!slots.empty() && slots.back().empty()) slots.pop_back();
  for (size_t c = 0; c < slots.size(); ++c) {
    ContainerDevices container;
    for (const auto& piece : SplitKeepEmpty(slots[c], ':')) {
      if (piece.find(',') == std::string::npos) continue;
      auto fields = SplitKeepEmpty(piece, ',');
      std::string where = "container slot " + std::to_string(c) + " device \"" + piece + "\"";
      if (fields.size() < 4) {
        return Error{where + ": missing fields, expected uuid,type,usedmem,usedcores"};
      }
      ContainerDevice d;
      d.uuid = fields[0];
      d.type = fields[1];
      long long mem = 0;
      long long cores = 0;
      if (d.uuid.empty()) return Error{where + ": empty GPU UUID"};
      if (!ParseInt64(fields[2], &mem) || mem < 0 || mem > std::numeric_limits<int32_t>::max()) {
        return Error{where + ": usedmem \"" + fields[2] + "\" is not a non-negative int32"};
      }
      if (!ParseInt64(fields[3], &cores) || cores < 0 ||
          cores > std::numeric_limits<int32_t>::max()) {
        return Error{where + ": usedcores \"" + fields[3] + "\" is not a non-negative int32"};
      }
      d.used_mem = static_cast<int32_t>(mem);
      d.used_cores = static_cast<int32_t>(cores);
      container.push_back(std::move(d));
    }
    pod.push_back(std::move(container));
  }
  return pod;
}

std::vector<std::string> GpuUuidsIn(std::string_view text) {
  std::vector<std::string> out;
  for (size_t pos = text.find("GPU-"); pos != std::string_view::npos;
       pos = text.find("GPU-", pos)) {
    size_t end = text.find_first_of(",:;\"' \t\n]}", pos);
    if (end == std::string_view::npos) end = text.size();
    out.emplace_back(text.substr(pos, end - pos));
    pos = end;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace tessera::codec
