#pragma once

// The part of NVML's C API that tessera uses, declared from the documented nvml.h (API v13)
// because Debian main ships no NVML header. Layouts are the x86-64 ones listed in
// docs/agent.md; the simulated library (src/nvml_sim) exports the same symbols.

#include <cstdint>

extern "C" {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlGpuInstance_t = struct nvmlGpuInstance_st*;
using nvmlComputeInstance_t = struct nvmlComputeInstance_st*;
using nvmlEventSet_t = struct nvmlEventSet_st*;

enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_UNKNOWN = 999,
};

enum : unsigned {
  NVML_DEVICE_MIG_DISABLE = 0,
  NVML_DEVICE_MIG_ENABLE = 1,
};

// NVML_GPU_INSTANCE_PROFILE_* (the enum passed to GetGpuInstanceProfileInfo; not info.id).
inline constexpr unsigned kNvmlGpuInstanceProfileCount = 0x12;
// NVML_COMPUTE_INSTANCE_PROFILE_*: 1_SLICE=0, 2=1, 3=2, 4=3, 7=4, 8=5, 6=6, 1_SLICE_REV1=7.
inline constexpr unsigned kNvmlComputeInstanceProfileCount = 9;
inline constexpr unsigned kNvmlComputeInstanceEngineProfileShared = 0;

inline constexpr unsigned kNvmlDeviceUuidBufferSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
inline constexpr unsigned kNvmlDeviceNameBufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE

inline constexpr unsigned long long kNvmlEventTypeSingleBitEccError = 0x0001ULL;
inline constexpr unsigned long long kNvmlEventTypeDoubleBitEccError = 0x0002ULL;
inline constexpr unsigned long long kNvmlEventTypeXidCriticalError = 0x0008ULL;

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlUtilization_t {
  unsigned gpu;     // percent of time a kernel ran over the last sample period
  unsigned memory;  // percent of time device memory was read or written
};

struct nvmlPciInfo_t {  // nvmlPciInfo_st as nvmlDeviceGetPciInfo_v3 fills it
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};

struct nvmlGpuInstancePlacement_t {
  unsigned start;
  unsigned size;
};

struct nvmlGpuInstanceProfileInfo_t {  // v1, 48 bytes
  unsigned id;                         // the hardware profile id (not the enum)
  unsigned isP2pSupported;
  unsigned sliceCount;
  unsigned instanceCount;
  unsigned multiprocessorCount;
  unsigned copyEngineCount;
  unsigned decoderCount;
  unsigned encoderCount;
  unsigned jpegCount;
  unsigned ofaCount;
  unsigned long long memorySizeMB;
};

struct nvmlGpuInstanceInfo_t {
  nvmlDevice_t device;
  unsigned id;
  unsigned profileId;
  nvmlGpuInstancePlacement_t placement;
};

struct nvmlComputeInstancePlacement_t {
  unsigned start;
  unsigned size;
};

struct nvmlComputeInstanceProfileInfo_t {  // v1, 36 bytes
  unsigned id;
  unsigned sliceCount;
  unsigned instanceCount;
  unsigned multiprocessorCount;
  unsigned sharedCopyEngineCount;
  unsigned sharedDecoderCount;
  unsigned sharedEncoderCount;
  unsigned sharedJpegCount;
  unsigned sharedOfaCount;
};

struct nvmlComputeInstanceInfo_t {
  nvmlDevice_t device;
  nvmlGpuInstance_t gpuInstance;
  unsigned id;
  unsigned profileId;
  nvmlComputeInstancePlacement_t placement;
};

struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for XidCriticalError
  unsigned gpuInstanceId;
  unsigned computeInstanceId;
};

struct nvmlProcessInfo_t {  // nvmlProcessInfo_v2_t, as the _v3 process queries fill it
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId;
  unsigned computeInstanceId;
};

}  // extern "C"

static_assert(sizeof(nvmlPciInfo_t) == 68);
static_assert(sizeof(nvmlUtilization_t) == 8);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48);
static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24);
static_assert(sizeof(nvmlComputeInstanceProfileInfo_t) == 36);
static_assert(sizeof(nvmlComputeInstanceInfo_t) == 32);
static_assert(sizeof(nvmlEventData_t) == 32);
static_assert(sizeof(nvmlProcessInfo_t) == 24);

// One X-macro list of the functions tessera resolves: (symbol, return type, parameters). The
// loader (nvml_library.cc) and the simulated library (src/nvml_sim) both expand it, so the two
// cannot drift apart. Versioned symbols are named exactly as the driver exports them.
#define TESSERA_NVML_FUNCTIONS(X)                                                                \
  X(nvmlInit_v2, nvmlReturn_t, (void))                                                           \
  X(nvmlShutdown, nvmlReturn_t, (void))                                                          \
  X(nvmlErrorString, const char*, (nvmlReturn_t result))                                         \
  X(nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned* count))                                      \
  X(nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned index, nvmlDevice_t* device))         \
  X(nvmlDeviceGetHandleByUUID, nvmlReturn_t, (const char* uuid, nvmlDevice_t* device))           \
  X(nvmlDeviceGetIndex, nvmlReturn_t, (nvmlDevice_t device, unsigned* index))                    \
  X(nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t device, char* uuid, unsigned length))         \
  X(nvmlDeviceGetName, nvmlReturn_t, (nvmlDevice_t device, char* name, unsigned length))         \
  X(nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_t * memory))         \
  X(nvmlDeviceGetPciInfo_v3, nvmlReturn_t, (nvmlDevice_t device, nvmlPciInfo_t * pci))           \
  X(nvmlDeviceGetMigMode, nvmlReturn_t,                                                          \
    (nvmlDevice_t device, unsigned* current, unsigned* pending))                                 \
  X(nvmlDeviceGetGpuInstanceProfileInfo, nvmlReturn_t,                                           \
    (nvmlDevice_t device, unsigned profile, nvmlGpuInstanceProfileInfo_t* info))                 \
  X(nvmlDeviceGetGpuInstancePossiblePlacements_v2, nvmlReturn_t,                                 \
    (nvmlDevice_t device, unsigned profileId, nvmlGpuInstancePlacement_t* placements,            \
     unsigned* count))                                                                           \
  X(nvmlDeviceCreateGpuInstanceWithPlacement, nvmlReturn_t,                                      \
    (nvmlDevice_t device, unsigned profileId, const nvmlGpuInstancePlacement_t* placement,       \
     nvmlGpuInstance_t* gpuInstance))                                                            \
  X(nvmlDeviceGetGpuInstances, nvmlReturn_t,                                                     \
    (nvmlDevice_t device, unsigned profileId, nvmlGpuInstance_t* gpuInstances, unsigned* count)) \
  X(nvmlDeviceGetGpuInstanceById, nvmlReturn_t,                                                  \
    (nvmlDevice_t device, unsigned id, nvmlGpuInstance_t* gpuInstance))                          \
  X(nvmlGpuInstanceGetInfo, nvmlReturn_t,                                                        \
    (nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t * info))                               \
  X(nvmlGpuInstanceGetComputeInstanceProfileInfo, nvmlReturn_t,                                  \
    (nvmlGpuInstance_t gpuInstance, unsigned profile, unsigned engProfile,                       \
     nvmlComputeInstanceProfileInfo_t* info))                                                    \
  X(nvmlGpuInstanceCreateComputeInstance, nvmlReturn_t,                                          \
    (nvmlGpuInstance_t gpuInstance, unsigned profileId, nvmlComputeInstance_t* computeInstance)) \
  X(nvmlGpuInstanceGetComputeInstances, nvmlReturn_t,                                            \
    (nvmlGpuInstance_t gpuInstance, unsigned profileId, nvmlComputeInstance_t* computeInstances, \
     unsigned* count))                                                                           \
  X(nvmlGpuInstanceGetComputeInstanceById, nvmlReturn_t,                                         \
    (nvmlGpuInstance_t gpuInstance, unsigned id, nvmlComputeInstance_t* computeInstance))        \
  X(nvmlComputeInstanceGetInfo_v2, nvmlReturn_t,                                                 \
    (nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t * info))                   \
  X(nvmlComputeInstanceDestroy, nvmlReturn_t, (nvmlComputeInstance_t computeInstance))           \
  X(nvmlGpuInstanceDestroy, nvmlReturn_t, (nvmlGpuInstance_t gpuInstance))                       \
  X(nvmlDeviceGetMaxMigDeviceCount, nvmlReturn_t, (nvmlDevice_t device, unsigned* count))        \
  X(nvmlDeviceGetMigDeviceHandleByIndex, nvmlReturn_t,                                           \
    (nvmlDevice_t device, unsigned index, nvmlDevice_t* migDevice))                              \
  X(nvmlDeviceGetGpuInstanceId, nvmlReturn_t, (nvmlDevice_t device, unsigned* id))               \
  X(nvmlDeviceGetComputeInstanceId, nvmlReturn_t, (nvmlDevice_t device, unsigned* id))           \
  X(nvmlEventSetCreate, nvmlReturn_t, (nvmlEventSet_t * set))                                    \
  X(nvmlDeviceGetSupportedEventTypes, nvmlReturn_t,                                              \
    (nvmlDevice_t device, unsigned long long* eventTypes))                                       \
  X(nvmlDeviceRegisterEvents, nvmlReturn_t,                                                      \
    (nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set))                    \
  X(nvmlEventSetWait_v2, nvmlReturn_t,                                                           \
    (nvmlEventSet_t set, nvmlEventData_t * data, unsigned timeoutms))                            \
  X(nvmlEventSetFree, nvmlReturn_t, (nvmlEventSet_t set))

// Functions tessera uses when the library has them: a library without one still loads, and the
// feature that needs it answers NOT_SUPPORTED (--set-mig-mode; utilisation is then unknown).
#define TESSERA_NVML_OPTIONAL_FUNCTIONS(X)                                \
  X(nvmlDeviceSetMigMode, nvmlReturn_t,                                   \
    (nvmlDevice_t device, unsigned mode, nvmlReturn_t* activationStatus)) \
  X(nvmlDeviceGetComputeRunningProcesses_v3, nvmlReturn_t,                \
    (nvmlDevice_t device, unsigned* infoCount, nvmlProcessInfo_t* infos)) \
  X(nvmlDeviceGetUtilizationRates, nvmlReturn_t,                          \
    (nvmlDevice_t device, nvmlUtilization_t * utilization))
