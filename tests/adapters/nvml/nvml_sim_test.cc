// The simulated NVML through the production dlopen path: the driver's MIG rules, its return
// codes, persistence across restarts and fault injection (mig-hardware.md section 5).

#include <gtest/gtest.h>

#include <fstream>

#include "support/nvml_sim.h"

namespace tessera {
namespace {

using testing::RtxPro6000;
using testing::SimulatedNvml;

// Raw C-level access to one GPU of the simulated library.
class RawGpu {
 public:
  explicit RawGpu(nvml::NvmlLibrary& lib, unsigned index = 0) : lib_(lib) {
    EXPECT_EQ(lib_.nvmlInit_v2(), NVML_SUCCESS);
    EXPECT_EQ(lib_.nvmlDeviceGetHandleByIndex_v2(index, &dev_), NVML_SUCCESS);
  }
  ~RawGpu() { lib_.nvmlShutdown(); }

  // The hardware id of the profile with this NVML enum.
  unsigned ProfileId(unsigned nvml_enum) {
    nvmlGpuInstanceProfileInfo_t info{};
    EXPECT_EQ(lib_.nvmlDeviceGetGpuInstanceProfileInfo(dev_, nvml_enum, &info), NVML_SUCCESS);
    return info.id;
  }
  int Create(unsigned nvml_enum, unsigned start, unsigned size, nvmlGpuInstance_t* gi = nullptr) {
    nvmlGpuInstance_t out = nullptr;
    nvmlGpuInstancePlacement_t p{start, size};
    int rc = lib_.nvmlDeviceCreateGpuInstanceWithPlacement(dev_, ProfileId(nvml_enum), &p, &out);
    if (gi != nullptr) *gi = out;
    return rc;
  }
  int CreateCi(nvmlGpuInstance_t gi, unsigned ci_profile, nvmlComputeInstance_t* ci = nullptr) {
    nvmlComputeInstanceProfileInfo_t info{};
    int rc = lib_.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, ci_profile, 0, &info);
    if (rc != NVML_SUCCESS) return rc;
    nvmlComputeInstance_t out = nullptr;
    rc = lib_.nvmlGpuInstanceCreateComputeInstance(gi, info.id, &out);
    if (ci != nullptr) *ci = out;
    return rc;
  }
  nvmlDevice_t dev() const { return dev_; }

 private:
  nvml::NvmlLibrary& lib_;
  nvmlDevice_t dev_ = nullptr;
};

constexpr unsigned k1Slice = 0, k2Slice = 1, k4Slice = 3, k1SliceMe = 7, k1SliceNoMe = 13,
                   k1SliceAllMe = 15, k3Slice = 2, k7Slice = 4;

TEST(NvmlSimTest, OnlyListedNonOverlappingPlacementsAreCreated) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  auto lib = SimulatedNvml::Library();
  RawGpu gpu(*lib);
  EXPECT_EQ(gpu.Create(k1Slice, 9, 3), NVML_SUCCESS);
  EXPECT_EQ(gpu.Create(k1Slice, 9, 3), NVML_ERROR_INSUFFICIENT_RESOURCES);  // R1 overlap
  EXPECT_EQ(gpu.Create(k1Slice, 1, 3), NVML_ERROR_INVALID_ARGUMENT);        // R2 unlisted
  EXPECT_EQ(gpu.Create(k2Slice, 6, 6), NVML_ERROR_INSUFFICIENT_RESOURCES);  // overlaps 9:3
  EXPECT_EQ(gpu.Create(k2Slice, 0, 6), NVML_SUCCESS);
  EXPECT_EQ(gpu.Create(k1Slice, 6, 3), NVML_SUCCESS);
  EXPECT_EQ(gpu.Create(k4Slice, 0, 12), NVML_ERROR_INSUFFICIENT_RESOURCES);
}

TEST(NvmlSimTest, MediaEngineProfilesAreExclusive) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  auto lib = SimulatedNvml::Library();
  RawGpu gpu(*lib);
  EXPECT_EQ(gpu.Create(k1SliceMe, 0, 3), NVML_SUCCESS);
  EXPECT_EQ(gpu.Create(k1SliceMe, 3, 3), NVML_ERROR_INSUFFICIENT_RESOURCES);     // R3/R4
  EXPECT_EQ(gpu.Create(k1SliceAllMe, 3, 3), NVML_ERROR_INSUFFICIENT_RESOURCES);  // R5
}

TEST(NvmlSimTest, AllMediaEnginesBlockEverythingButNoMediaProfiles) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  auto lib = SimulatedNvml::Library();
  RawGpu gpu(*lib);
  EXPECT_EQ(gpu.Create(k1SliceAllMe, 0, 3), NVML_SUCCESS);
  EXPECT_EQ(gpu.Create(k1Slice, 3, 3), NVML_ERROR_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(gpu.Create(k1SliceNoMe, 3, 3), NVML_SUCCESS);
}

TEST(NvmlSimTest, A100TakesFourAndThreeSliceTogetherButNothingBesideSeven) {
  SimulatedNvml sim(R"([{"uuid": "GPU-a", "model": "A100-40GB", "migMode": true},
                        {"uuid": "GPU-b", "model": "A100-40GB", "migMode": true}])");
  auto lib = SimulatedNvml::Library();
  {
    RawGpu gpu(*lib, 0);
    EXPECT_EQ(gpu.Create(k4Slice, 0, 4), NVML_SUCCESS);  // R8
    EXPECT_EQ(gpu.Create(k3Slice, 4, 4), NVML_SUCCESS);
  }
  RawGpu gpu(*lib, 1);
  EXPECT_EQ(gpu.Create(k7Slice, 0, 8), NVML_SUCCESS);
  EXPECT_EQ(gpu.Create(k1Slice, 6, 1), NVML_ERROR_INSUFFICIENT_RESOURCES);
}

TEST(NvmlSimTest, ComputeInstancesFollowTheGpuInstanceRules) {
  SimulatedNvml sim(R"([{"uuid": "GPU-a", "model": "A100-40GB", "migMode": true}])");
  auto lib = SimulatedNvml::Library();
  RawGpu gpu(*lib);
  nvmlGpuInstance_t gi = nullptr;
  ASSERT_EQ(gpu.Create(k3Slice, 0, 4, &gi), NVML_SUCCESS);
  EXPECT_EQ(gpu.CreateCi(gi, /*4 slices*/ 3), NVML_ERROR_NOT_SUPPORTED);  // R12: C <= G
  nvmlComputeInstance_t ci = nullptr;
  EXPECT_EQ(gpu.CreateCi(gi, /*3 slices*/ 2, &ci), NVML_SUCCESS);
  EXPECT_EQ(gpu.CreateCi(gi, /*1 slice*/ 0), NVML_ERROR_INSUFFICIENT_RESOURCES);  // GI is full
  EXPECT_EQ(lib->nvmlGpuInstanceDestroy(gi), NVML_ERROR_IN_USE);                  // R7
  EXPECT_EQ(lib->nvmlComputeInstanceDestroy(ci), NVML_SUCCESS);
  EXPECT_EQ(lib->nvmlGpuInstanceDestroy(gi), NVML_SUCCESS);
  EXPECT_EQ(lib->nvmlGpuInstanceDestroy(gi), NVML_ERROR_INVALID_ARGUMENT);  // stale handle
}

TEST(NvmlSimTest, MigModeOffRefusesInstancesButListsPlacements) {
  SimulatedNvml sim(R"([{"uuid": "GPU-a", "model": "A100-40GB", "migMode": false},
                        {"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360}])");
  auto lib = SimulatedNvml::Library();
  ASSERT_EQ(lib->nvmlInit_v2(), NVML_SUCCESS);
  nvmlDevice_t a = nullptr;
  nvmlDevice_t t4 = nullptr;
  ASSERT_EQ(lib->nvmlDeviceGetHandleByIndex_v2(0, &a), NVML_SUCCESS);
  ASSERT_EQ(lib->nvmlDeviceGetHandleByUUID("GPU-t4", &t4), NVML_SUCCESS);
  nvmlGpuInstancePlacement_t p{0, 1};
  nvmlGpuInstance_t gi = nullptr;
  EXPECT_EQ(lib->nvmlDeviceCreateGpuInstanceWithPlacement(a, 19, &p, &gi),
            NVML_ERROR_NOT_SUPPORTED);
  unsigned count = 0;
  EXPECT_EQ(lib->nvmlDeviceGetGpuInstancePossiblePlacements_v2(a, 19, nullptr, &count),
            NVML_SUCCESS);
  EXPECT_EQ(count, 7U);  // R6: placements are known with MIG off
  unsigned current = 0;
  unsigned pending = 0;
  EXPECT_EQ(lib->nvmlDeviceGetMigMode(t4, &current, &pending), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(lib->nvmlDeviceGetHandleByUUID("GPU-nope", &t4), NVML_ERROR_NOT_FOUND);
  lib->nvmlShutdown();
}

// nvmlDeviceSetMigMode as the guide describes it (mig-hardware.md 4): from Hopper on an idle
// GPU takes the mode at once; Ampere keeps it pending until a GPU reset (RESET_REQUIRED); a GPU
// with processes keeps it pending (IN_USE); a reboot applies the pending mode. Issue 38 G.
TEST(NvmlSimTest, SetMigModeAppliesAtOnceOnlyOnAnIdleGpuThatNeedsNoReset) {
  SimulatedNvml sim(R"([{"uuid": "GPU-h100", "model": "H100-SXM5-80GB", "migMode": false},
                        {"uuid": "GPU-a100", "model": "A100-40GB", "migMode": false},
                        {"uuid": "GPU-busy", "model": "H100-SXM5-80GB", "processes": 2},
                        {"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360}])");
  const auto mode = [](nvml::NvmlLibrary& lib, nvmlDevice_t dev) {
    unsigned current = 9;
    unsigned pending = 9;
    EXPECT_EQ(lib.nvmlDeviceGetMigMode(dev, &current, &pending), NVML_SUCCESS);
    return std::pair{current, pending};
  };
  {
    auto lib = SimulatedNvml::Library();
    ASSERT_EQ(lib->nvmlInit_v2(), NVML_SUCCESS);
    nvmlDevice_t h100 = nullptr;
    nvmlDevice_t a100 = nullptr;
    nvmlDevice_t busy = nullptr;
    nvmlDevice_t t4 = nullptr;
    ASSERT_EQ(lib->nvmlDeviceGetHandleByUUID("GPU-h100", &h100), NVML_SUCCESS);
    ASSERT_EQ(lib->nvmlDeviceGetHandleByUUID("GPU-a100", &a100), NVML_SUCCESS);
    ASSERT_EQ(lib->nvmlDeviceGetHandleByUUID("GPU-busy", &busy), NVML_SUCCESS);
    ASSERT_EQ(lib->nvmlDeviceGetHandleByUUID("GPU-t4", &t4), NVML_SUCCESS);

    unsigned processes = 0;
    EXPECT_EQ(lib->nvmlDeviceGetComputeRunningProcesses_v3(h100, &processes, nullptr),
              NVML_SUCCESS);
    EXPECT_EQ(processes, 0U);
    EXPECT_EQ(lib->nvmlDeviceGetComputeRunningProcesses_v3(busy, &processes, nullptr),
              NVML_ERROR_INSUFFICIENT_SIZE);
    EXPECT_EQ(processes, 2U);  // the size the caller needs

    nvmlReturn_t activation = -1;
    EXPECT_EQ(lib->nvmlDeviceSetMigMode(h100, NVML_DEVICE_MIG_ENABLE, &activation), NVML_SUCCESS);
    EXPECT_EQ(activation, NVML_SUCCESS);
    EXPECT_EQ(mode(*lib, h100), (std::pair{1U, 1U}));
    nvmlGpuInstanceProfileInfo_t info{};
    EXPECT_EQ(lib->nvmlDeviceGetGpuInstanceProfileInfo(h100, 0, &info), NVML_SUCCESS);

    EXPECT_EQ(lib->nvmlDeviceSetMigMode(a100, NVML_DEVICE_MIG_ENABLE, &activation), NVML_SUCCESS);
    EXPECT_EQ(activation, NVML_ERROR_RESET_REQUIRED);
    EXPECT_EQ(mode(*lib, a100), (std::pair{0U, 1U}));  // pending enable
    EXPECT_EQ(lib->nvmlDeviceGetGpuInstanceProfileInfo(a100, 0, &info), NVML_ERROR_NOT_SUPPORTED);

    EXPECT_EQ(lib->nvmlDeviceSetMigMode(busy, NVML_DEVICE_MIG_ENABLE, &activation), NVML_SUCCESS);
    EXPECT_EQ(activation, NVML_ERROR_IN_USE);
    EXPECT_EQ(mode(*lib, busy), (std::pair{0U, 1U}));

    EXPECT_EQ(lib->nvmlDeviceSetMigMode(t4, NVML_DEVICE_MIG_ENABLE, &activation),
              NVML_ERROR_NOT_SUPPORTED);
    EXPECT_EQ(lib->nvmlDeviceSetMigMode(h100, 7, &activation), NVML_ERROR_INVALID_ARGUMENT);
    // MIG off while a GPU instance exists: IN_USE, and nothing changes.
    nvmlGpuInstancePlacement_t p{0, 1};
    nvmlGpuInstance_t gi = nullptr;
    ASSERT_EQ(lib->nvmlDeviceCreateGpuInstanceWithPlacement(h100, info.id, &p, &gi), NVML_SUCCESS);
    EXPECT_EQ(lib->nvmlDeviceSetMigMode(h100, NVML_DEVICE_MIG_DISABLE, &activation),
              NVML_ERROR_IN_USE);
    EXPECT_EQ(mode(*lib, h100), (std::pair{1U, 1U}));
    lib->nvmlShutdown();
  }
  // The modes are kept in the state file; a reboot applies the pending ones and ends the
  // processes.
  sim.Reboot();
  auto lib = SimulatedNvml::Library();
  ASSERT_EQ(lib->nvmlInit_v2(), NVML_SUCCESS);
  for (const char* uuid : {"GPU-h100", "GPU-a100", "GPU-busy"}) {
    nvmlDevice_t dev = nullptr;
    ASSERT_EQ(lib->nvmlDeviceGetHandleByUUID(uuid, &dev), NVML_SUCCESS);
    EXPECT_EQ(mode(*lib, dev), (std::pair{1U, 1U})) << uuid;
    unsigned processes = 0;
    EXPECT_EQ(lib->nvmlDeviceGetComputeRunningProcesses_v3(dev, &processes, nullptr), NVML_SUCCESS);
  }
  lib->nvmlShutdown();
}

TEST(NvmlSimTest, InstancesSurviveRestartWithFreshIdsAndUniqueUuids) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  auto lib = SimulatedNvml::Library();
  std::string first_uuid;
  {
    RawGpu gpu(*lib);
    nvmlGpuInstance_t gi = nullptr;
    ASSERT_EQ(gpu.Create(k1Slice, 6, 3, &gi), NVML_SUCCESS);
    nvmlComputeInstance_t ci = nullptr;
    ASSERT_EQ(gpu.CreateCi(gi, 0, &ci), NVML_SUCCESS);
    nvmlDevice_t mig = nullptr;
    ASSERT_EQ(lib->nvmlDeviceGetMigDeviceHandleByIndex(gpu.dev(), 0, &mig), NVML_SUCCESS);
    char uuid[96];
    ASSERT_EQ(lib->nvmlDeviceGetUUID(mig, uuid, sizeof uuid), NVML_SUCCESS);
    first_uuid = uuid;
    EXPECT_EQ(first_uuid.rfind("MIG-", 0), 0U);
    EXPECT_EQ(first_uuid.size(), 40U);
  }
  // A "restarted agent": a fresh init re-reads the state file.
  RawGpu gpu(*lib);
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(lib->nvmlDeviceGetHandleByUUID(first_uuid.c_str(), &mig), NVML_SUCCESS);
  unsigned gi_id = 0;
  ASSERT_EQ(lib->nvmlDeviceGetGpuInstanceId(mig, &gi_id), NVML_SUCCESS);
  nvmlGpuInstance_t gi = nullptr;
  ASSERT_EQ(lib->nvmlDeviceGetGpuInstanceById(gpu.dev(), gi_id, &gi), NVML_SUCCESS);
  nvmlGpuInstanceInfo_t info{};
  ASSERT_EQ(lib->nvmlGpuInstanceGetInfo(gi, &info), NVML_SUCCESS);
  EXPECT_EQ(info.placement.start, 6U);
  // A second instance gets another id and a UUID never used before.
  nvmlGpuInstance_t gi2 = nullptr;
  ASSERT_EQ(gpu.Create(k1Slice, 0, 3, &gi2), NVML_SUCCESS);
  nvmlGpuInstanceInfo_t info2{};
  ASSERT_EQ(lib->nvmlGpuInstanceGetInfo(gi2, &info2), NVML_SUCCESS);
  EXPECT_NE(info2.id, info.id);
  ASSERT_EQ(gpu.CreateCi(gi2, 0), NVML_SUCCESS);
  nvmlDevice_t mig2 = nullptr;
  ASSERT_EQ(lib->nvmlDeviceGetMigDeviceHandleByIndex(gpu.dev(), 1, &mig2), NVML_SUCCESS);
  char uuid2[96];
  ASSERT_EQ(lib->nvmlDeviceGetUUID(mig2, uuid2, sizeof uuid2), NVML_SUCCESS);
  EXPECT_NE(first_uuid, uuid2);
}

TEST(NvmlSimTest, FaultInjectionFailsTheNthCallWithoutEffect) {
  SimulatedNvml sim("[" + RtxPro6000() + "]",
                    "fail:nvmlDeviceCreateGpuInstanceWithPlacement:2:INSUFFICIENT_RESOURCES,"
                    "fail:nvmlDeviceGetMigMode:*:19");
  auto lib = SimulatedNvml::Library();
  RawGpu gpu(*lib);
  EXPECT_EQ(gpu.Create(k1Slice, 0, 3), NVML_SUCCESS);
  EXPECT_EQ(gpu.Create(k1Slice, 3, 3), NVML_ERROR_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(gpu.Create(k1Slice, 3, 3), NVML_SUCCESS);  // the failed call changed nothing
  unsigned current = 0;
  unsigned pending = 0;
  EXPECT_EQ(lib->nvmlDeviceGetMigMode(gpu.dev(), &current, &pending), NVML_ERROR_IN_USE);
  EXPECT_EQ(lib->nvmlDeviceGetMigMode(gpu.dev(), &current, &pending), NVML_ERROR_IN_USE);
}

TEST(NvmlSimDeathTest, AbortAfterACallKeepsItsEffect) {
  GTEST_FLAG_SET(death_test_style, "fast");  // the child shares the state directory
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  auto lib = SimulatedNvml::Library();
  EXPECT_DEATH(
      {
        SimulatedNvml::SetFaults("abort-after:nvmlDeviceCreateGpuInstanceWithPlacement:1");
        RawGpu gpu(*lib);
        (void)gpu.Create(k1Slice, 9, 3);
      },
      "abort after nvmlDeviceCreateGpuInstanceWithPlacement");
  SimulatedNvml::SetFaults("");
  RawGpu gpu(*lib);
  EXPECT_EQ(gpu.Create(k1Slice, 9, 3), NVML_ERROR_INSUFFICIENT_RESOURCES);  // it exists
}

TEST(NvmlSimTest, BadStateOrFaultConfigurationFailsInitWithAMessage) {
  SimulatedNvml sim(R"([{"uuid": "GPU-a", "model": "TPU-v9"}])");
  auto lib = SimulatedNvml::Library();
  ::testing::internal::CaptureStderr();
  EXPECT_NE(lib->nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_NE(
      ::testing::internal::GetCapturedStderr().find("\"TPU-v9\" is not in the built-in MIG table"),
      std::string::npos);
  SimulatedNvml bad_faults("[" + RtxPro6000() + "]", "explode:now");
  ::testing::internal::CaptureStderr();
  EXPECT_NE(lib->nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("explode:now"), std::string::npos);
  SimulatedNvml::SetFaults("");
}

TEST(NvmlSimTest, XidEventsAreDeliveredFromTheEventsFile) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  auto lib = SimulatedNvml::Library();
  RawGpu gpu(*lib);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(lib->nvmlEventSetCreate(&set), NVML_SUCCESS);
  ASSERT_EQ(lib->nvmlDeviceRegisterEvents(gpu.dev(), kNvmlEventTypeXidCriticalError, set),
            NVML_SUCCESS);
  nvmlEventData_t data{};
  EXPECT_EQ(lib->nvmlEventSetWait_v2(set, &data, 10), NVML_ERROR_TIMEOUT);
  sim.AppendXid("GPU-rtx-0", 79);
  ASSERT_EQ(lib->nvmlEventSetWait_v2(set, &data, 1000), NVML_SUCCESS);
  EXPECT_EQ(data.eventData, 79U);
  EXPECT_EQ(data.device, gpu.dev());
  EXPECT_EQ(lib->nvmlEventSetWait_v2(set, &data, 10), NVML_ERROR_TIMEOUT);  // consumed
  EXPECT_EQ(lib->nvmlEventSetFree(set), NVML_SUCCESS);
}

}  // namespace
}  // namespace tessera
