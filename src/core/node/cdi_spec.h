#pragma once

// CDI (Container Device Interface) specs for the MIG instances the agent creates. With a CDI
// device-list strategy the agent answers Allocate with CDI names (`<kind>=MIG-<uuid>`); the
// container runtime resolves them from spec files, and the NVIDIA toolkit's spec, written once,
// cannot know instances made later (hami-node.md W13). This renders tessera's own spec for
// them: per instance the parent GPU's /dev/nvidia<minor> and the /dev/nvidia-caps nodes of its
// GPU- and compute-instance access capabilities; for all, the control nodes.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::node {

inline constexpr std::string_view kCdiVersion = "0.5.0";

// One MIG device: a compute instance of a GPU instance, named by its MIG UUID.
struct MigCdiDevice {
  std::string mig_uuid;
  std::string gpu_uuid;  // the parent GPU
  uint32_t gpu_instance_id = 0;
  uint32_t compute_instance_id = 0;
  bool operator==(const MigCdiDevice&) const = default;
};

// What the driver's /proc files say about device nodes.
struct NvidiaDeviceMinors {
  std::map<std::string, int> gpu_minor;  // GPU UUID -> minor of /dev/nvidia<minor>
  // "gpu<minor>/gi<G>/access", "gpu<minor>/gi<G>/ci<C>/access" -> minor of
  // /dev/nvidia-caps/nvidia-cap<minor> (/proc/driver/nvidia-caps/mig-minors).
  std::map<std::string, int> mig_cap_minor;
};

// /proc/driver/nvidia-caps/mig-minors: lines "<capability path> <minor>"; others are skipped.
std::map<std::string, int> ParseMigMinors(std::string_view text);

// /proc/driver/nvidia/gpus/<PCI bus id>/information: the GPU's UUID ("GPU UUID:") and device
// minor ("Device Minor:"); nullopt without both.
struct GpuMinor {
  std::string gpu_uuid;
  int minor = 0;
};
std::optional<GpuMinor> ParseGpuInformation(std::string_view text);

// The MIG capability paths of mig-minors for one instance.
std::string GpuInstanceCapability(int gpu_minor, uint32_t gpu_instance_id);
std::string ComputeInstanceCapability(int gpu_minor, uint32_t gpu_instance_id,
                                      uint32_t compute_instance_id);

struct RenderedCdiSpec {
  std::string json;                   // the spec file's content (sorted keys, stable order)
  std::vector<std::string> devices;   // the MIG UUIDs it names, sorted
  std::vector<std::string> problems;  // device nodes left out because /proc did not say them
};

// The spec of `kind` ("vendor/class") for `devices` (sorted by MIG UUID, duplicates dropped).
// A device whose GPU minor or capability minors `minors` lacks is listed with the nodes that
// are known, and a problem says which are missing (on a node without the driver's /proc files,
// e.g. the simulated NVML, only the control nodes are known).
RenderedCdiSpec RenderMigCdiSpec(std::string_view kind, std::vector<MigCdiDevice> devices,
                                 const NvidiaDeviceMinors& minors);

}  // namespace tessera::node
