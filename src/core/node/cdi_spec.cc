#include "core/node/cdi_spec.h"

#include <algorithm>
#include <charconv>

#include "core/codec/json_util.h"

namespace tessera::node {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::optional<int> ParseMinor(std::string_view s) {
  s = Trim(s);
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// Calls `line` for each line of `text`.
template <class F>
void ForEachLine(std::string_view text, F line) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    line(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

codec::Json DeviceNode(const std::string& path) { return codec::Json{{"path", path}}; }

}  // namespace

std::map<std::string, int> ParseMigMinors(std::string_view text) {
  std::map<std::string, int> out;
  ForEachLine(text, [&](std::string_view line) {
    line = Trim(line);
    const size_t space = line.find_last_of(" \t");
    if (space == std::string_view::npos) return;
    const auto minor = ParseMinor(line.substr(space + 1));
    const std::string_view path = Trim(line.substr(0, space));
    if (minor && !path.empty()) out[std::string(path)] = *minor;
  });
  return out;
}

std::optional<GpuMinor> ParseGpuInformation(std::string_view text) {
  std::optional<std::string> uuid;
  std::optional<int> minor;
  ForEachLine(text, [&](std::string_view line) {
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    const std::string_view key = Trim(line.substr(0, colon));
    const std::string_view value = Trim(line.substr(colon + 1));
    if (key == "GPU UUID" && !value.empty()) uuid = std::string(value);
    if (key == "Device Minor") minor = ParseMinor(value);
  });
  if (!uuid || !minor) return std::nullopt;
  return GpuMinor{*uuid, *minor};
}

std::string GpuInstanceCapability(int gpu_minor, uint32_t gpu_instance_id) {
  return "gpu" + std::to_string(gpu_minor) + "/gi" + std::to_string(gpu_instance_id) + "/access";
}

std::string ComputeInstanceCapability(int gpu_minor, uint32_t gpu_instance_id,
                                      uint32_t compute_instance_id) {
  return "gpu" + std::to_string(gpu_minor) + "/gi" + std::to_string(gpu_instance_id) + "/ci" +
         std::to_string(compute_instance_id) + "/access";
}

RenderedCdiSpec RenderMigCdiSpec(std::string_view kind, std::vector<MigCdiDevice> devices,
                                 const NvidiaDeviceMinors& minors) {
  std::sort(devices.begin(), devices.end(),
            [](const auto& a, const auto& b) { return a.mig_uuid < b.mig_uuid; });
  devices.erase(std::unique(devices.begin(), devices.end(),
                            [](const auto& a, const auto& b) { return a.mig_uuid == b.mig_uuid; }),
                devices.end());
  RenderedCdiSpec out;
  codec::Json list = codec::Json::array();
  for (const auto& d : devices) {
    codec::Json nodes = codec::Json::array();
    const auto gpu = minors.gpu_minor.find(d.gpu_uuid);
    if (gpu == minors.gpu_minor.end()) {
      out.problems.push_back(d.mig_uuid + ": the device minor of GPU " + d.gpu_uuid +
                             " is unknown: no /dev/nvidia<minor> and no MIG capability nodes");
    } else {
      nodes.push_back(DeviceNode("/dev/nvidia" + std::to_string(gpu->second)));
      // Access to a MIG device is granted by its GPU- and compute-instance capabilities.
      for (const std::string& cap :
           {GpuInstanceCapability(gpu->second, d.gpu_instance_id),
            ComputeInstanceCapability(gpu->second, d.gpu_instance_id, d.compute_instance_id)}) {
        const auto minor = minors.mig_cap_minor.find(cap);
        if (minor == minors.mig_cap_minor.end()) {
          out.problems.push_back(d.mig_uuid + ": no minor for MIG capability " + cap);
          continue;
        }
        nodes.push_back(DeviceNode("/dev/nvidia-caps/nvidia-cap" + std::to_string(minor->second)));
      }
    }
    list.push_back({{"name", d.mig_uuid}, {"containerEdits", {{"deviceNodes", nodes}}}});
    out.devices.push_back(d.mig_uuid);
  }
  // The control nodes every CUDA process opens, whichever MIG device it was given.
  const codec::Json common = {{"deviceNodes",
                               {DeviceNode("/dev/nvidiactl"), DeviceNode("/dev/nvidia-uvm"),
                                DeviceNode("/dev/nvidia-uvm-tools")}}};
  const codec::Json spec = {{"cdiVersion", std::string(kCdiVersion)},
                            {"kind", std::string(kind)},
                            {"devices", list},
                            {"containerEdits", common}};
  out.json = spec.dump(2) + "\n";
  return out;
}

}  // namespace tessera::node
