// The CDI spec of tessera's MIG instances: parsed /proc files, and a golden spec naming each MIG
// UUID with its parent GPU's node and its GI/CI capability nodes.

#include "core/node/cdi_spec.h"

#include <gtest/gtest.h>

namespace tessera::node {
namespace {

// As /proc/driver/nvidia-caps/mig-minors reads on a two-GPU node.
const char* kMigMinors =
    "config 1\n"
    "monitor 2\n"
    "gpu0/gi1/access 12\n"
    "gpu0/gi1/ci0/access 13\n"
    "gpu0/gi2/access 21\n"
    "gpu0/gi2/ci0/access 22\n"
    "gpu1/gi3/access 165\n"
    "gpu1/gi3/ci0/access 166\n"
    "not a line\n";

TEST(CdiSpecTest, MigMinorsMapEachCapabilityToItsMinor) {
  const auto minors = ParseMigMinors(kMigMinors);
  EXPECT_EQ(minors.size(), 8U);
  EXPECT_EQ(minors.at("gpu0/gi1/ci0/access"), 13);
  EXPECT_EQ(minors.at("gpu1/gi3/access"), 165);
  EXPECT_EQ(minors.count("not a"), 0U);
}

TEST(CdiSpecTest, GpuInformationGivesTheUuidAndDeviceMinor) {
  const auto gpu = ParseGpuInformation(
      "Model: \t\t NVIDIA A100-SXM4-40GB\n"
      "IRQ:   \t\t 160\n"
      "GPU UUID: \t GPU-0a1b2c3d-0000-1111-2222-333344445555\n"
      "Video BIOS: \t 92.00.45.00.06\n"
      "Bus Type: \t PCIe\n"
      "DMA Size: \t 47 bits\n"
      "Bus Location: \t 0000:07:00.0\n"
      "Device Minor: \t 1\n");
  ASSERT_TRUE(gpu.has_value());
  EXPECT_EQ(gpu->gpu_uuid, "GPU-0a1b2c3d-0000-1111-2222-333344445555");
  EXPECT_EQ(gpu->minor, 1);
  EXPECT_FALSE(ParseGpuInformation("Model: x\nGPU UUID: GPU-1\n").has_value());
}

TEST(CdiSpecTest, TheSpecNamesEachMigDeviceWithItsGpuAndCapabilityNodes) {
  NvidiaDeviceMinors minors;
  minors.gpu_minor = {{"GPU-a", 0}, {"GPU-b", 1}};
  minors.mig_cap_minor = ParseMigMinors(kMigMinors);
  const auto spec = RenderMigCdiSpec(
      "k8s.device-plugin.nvidia.com/gpu",
      {{"MIG-b", "GPU-b", 3, 0}, {"MIG-a", "GPU-a", 2, 0}, {"MIG-b", "GPU-b", 3, 0}}, minors);
  EXPECT_TRUE(spec.problems.empty());
  EXPECT_EQ(spec.devices, (std::vector<std::string>{"MIG-a", "MIG-b"}));
  EXPECT_EQ(spec.json, R"({
  "cdiVersion": "0.5.0",
  "containerEdits": {
    "deviceNodes": [
      {
        "path": "/dev/nvidiactl"
      },
      {
        "path": "/dev/nvidia-uvm"
      },
      {
        "path": "/dev/nvidia-uvm-tools"
      }
    ]
  },
  "devices": [
    {
      "containerEdits": {
        "deviceNodes": [
          {
            "path": "/dev/nvidia0"
          },
          {
            "path": "/dev/nvidia-caps/nvidia-cap21"
          },
          {
            "path": "/dev/nvidia-caps/nvidia-cap22"
          }
        ]
      },
      "name": "MIG-a"
    },
    {
      "containerEdits": {
        "deviceNodes": [
          {
            "path": "/dev/nvidia1"
          },
          {
            "path": "/dev/nvidia-caps/nvidia-cap165"
          },
          {
            "path": "/dev/nvidia-caps/nvidia-cap166"
          }
        ]
      },
      "name": "MIG-b"
    }
  ],
  "kind": "k8s.device-plugin.nvidia.com/gpu"
}
)");
}

// The simulated NVML has no /proc files: the device is still named (its name resolves), with
// the control nodes only, and the problem says what is missing.
TEST(CdiSpecTest, UnknownMinorsLeaveNodesOutAndSaySo) {
  NvidiaDeviceMinors minors;
  minors.gpu_minor = {{"GPU-a", 0}};
  const auto spec = RenderMigCdiSpec("example.com/gpu",
                                     {{"MIG-x", "GPU-x", 1, 0}, {"MIG-a", "GPU-a", 1, 0}}, minors);
  EXPECT_EQ(spec.devices, (std::vector<std::string>{"MIG-a", "MIG-x"}));
  ASSERT_EQ(spec.problems.size(), 3U);
  EXPECT_NE(spec.problems[0].find("MIG-a: no minor for MIG capability gpu0/gi1/access"),
            std::string::npos)
      << spec.problems[0];
  EXPECT_NE(spec.problems[2].find("the device minor of GPU GPU-x is unknown"), std::string::npos)
      << spec.problems[2];
  EXPECT_NE(spec.json.find("\"path\": \"/dev/nvidia0\""), std::string::npos);
  EXPECT_NE(spec.json.find("\"name\": \"MIG-x\""), std::string::npos);
}

}  // namespace
}  // namespace tessera::node
