// The node agent's own work per operation, on the simulated NVML with its state and the ledger
// on tmpfs (so the numbers are the agent's, not a disk's): Allocate of one container with 8 MIG
// instances, and a full reconcile pass over 8 GPUs x 7 instances.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "adapters/nvml/nvml_gpu_driver.h"
#include "agent/allocator.h"
#include "agent/mig_manager.h"
#include "core/codec/mig_allocations.h"
#include "core/model/annotations.h"

namespace tessera {
namespace {

namespace ann = model::annotations;

// A complete pod view, newer than every ledger entry.
constexpr node::PodViewFreshness kFreshView{true, std::numeric_limits<int64_t>::max()};

class MemoryApi : public agent::NodeApi {
 public:
  std::vector<model::Pod> pods;
  agent::ApiResult<std::vector<model::Pod>> PodsOnNode(bool) override { return pods; }
  agent::ApiResult<agent::PodView> PodViewOnNode() override {
    return agent::PodView{pods, std::numeric_limits<int64_t>::max()};
  }
  agent::ApiResult<model::Node> GetNode() override { return model::Node{}; }
  agent::ApiResult<std::optional<model::Pod>> ReadPod(const std::string& ns,
                                                      const std::string& name) override {
    std::optional<model::Pod> read;  // NotFound unless a pod has the name
    for (const auto& p : pods) {
      if (p.ns == ns && p.name == name) read.emplace(p);
    }
    return read;
  }
  agent::ApiResult<model::Pod> PatchPod(const model::Pod& pod, const agent::AnnotationPatch& patch,
                                        const std::string&) override {
    model::Pod out = pod;
    for (const auto& [k, v] : patch) {
      if (v) out.annotations[k] = *v;
    }
    return out;
  }
  agent::ApiResult<model::Node> PatchNode(const agent::AnnotationPatch&,
                                          const std::string&) override {
    return model::Node{};
  }
  void PodEvent(const model::Pod&, const std::string&, const std::string&, bool) override {}
  void NodeEvent(const std::string&, const std::string&, bool) override {}
  agent::ApiResult<model::Pod> FailPod(const model::Pod& pod, const std::string&,
                                       const std::string&) override {
    return pod;
  }
};

struct Bench {
  explicit Bench(int gpus) {
    dir = "/dev/shm/tessera-agent-bench-" + std::to_string(::getpid());
    if (!std::filesystem::exists("/dev/shm"))
      dir = "/tmp/tessera-agent-bench-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    std::ofstream state(dir + "/state.json");
    state << "{\"gpus\":[";
    for (int g = 0; g < gpus; ++g) {
      state << (g ? "," : "") << "{\"uuid\":\"GPU-" << g
            << "\",\"model\":\"A100-80GB\",\"migMode\":true}";
    }
    state << "]}";
    state.close();
    ::setenv("TESSERA_NVML_SIM_STATE", (dir + "/state.json").c_str(), 1);
    catalog = mig::GpuModelCatalog::Builtin().value();
    driver =
        std::move(nvml::NvmlGpuDriver::Create(
                      std::move(nvml::NvmlLibrary::Open(TESSERA_NVML_SIM_PATH).value()), &catalog)
                      .value());
    (void)driver->Discover();
    mig = std::make_unique<agent::MigManager>(*driver, agent::LedgerFile(dir + "/ledger.json"),
                                              [clock = int64_t{0}]() mutable { return ++clock; });
    (void)mig->Start();
    std::vector<std::string> uuids;
    for (int g = 0; g < gpus; ++g) uuids.push_back("GPU-" + std::to_string(g));
    mig->SetMigGpus(uuids);
  }
  ~Bench() { std::filesystem::remove_all(dir); }
  std::string dir;
  mig::GpuModelCatalog catalog;
  std::unique_ptr<nvml::NvmlGpuDriver> driver;
  std::unique_ptr<agent::MigManager> mig;
};

// One container asking 8 x 1g.10gb: 7 on GPU-0 and 1 on GPU-1.
model::Pod EightInstancePod() {
  std::vector<codec::MigAllocation> allocs;
  std::string devices;
  for (int i = 0; i < 8; ++i) {
    codec::MigAllocation a;
    a.device_index = i;
    a.gpu_uuid = i < 7 ? "GPU-0" : "GPU-1";
    a.profile = "1g.10gb";
    a.placement = {static_cast<uint32_t>(i < 7 ? i : 0), 1};
    allocs.push_back(a);
    devices += a.gpu_uuid + ",NVIDIA,9856,15:";
  }
  model::Pod p;
  p.name = "big";
  p.uid = "uid-big";
  p.phase = "Pending";
  p.resource_version = "1";
  p.containers.push_back(model::Container{"main", {}, {}, false});
  p.annotations[std::string(ann::kAssignedNode)] = "n1";
  p.annotations[std::string(ann::kBindPhase)] = "allocating";
  p.annotations[std::string(ann::kDevicesToAllocate)] = devices + ";";
  p.annotations[std::string(ann::kMigAllocations)] = codec::EncodeMigAllocations(allocs);
  return p;
}

void BM_AllocateEightMigInstances(benchmark::State& state) {
  Bench b(2);
  MemoryApi api;
  api.pods = {EightInstancePod()};
  agent::AllocatorConfig config;
  config.node_name = "n1";
  agent::Allocator allocator(api, *b.mig, config, [] { return std::string("x"); });
  allocator.SetMigGpus({"GPU-0", "GPU-1"});
  const std::vector<std::vector<std::string>> request = {
      {"GPU-0-0", "GPU-0-1", "GPU-0-2", "GPU-0-3", "GPU-0-4", "GPU-0-5", "GPU-0-6", "GPU-1-0"}};
  for (auto _ : state) {
    auto r = allocator.Allocate(request);
    if (!r.ok()) state.SkipWithError(r.error().message.c_str());
    state.PauseTiming();
    auto report = b.mig->Reconcile(node::NodeClaims{}, kFreshView);  // the pod ended
    if (report.destroyed != 8) state.SkipWithError("reconcile did not destroy the 8 instances");
    state.ResumeTiming();
  }
}
BENCHMARK(BM_AllocateEightMigInstances)->Unit(benchmark::kMicrosecond);

void BM_ReconcileEightGpusSevenInstances(benchmark::State& state) {
  Bench b(8);
  node::NodeClaims claims;
  for (int g = 0; g < 8; ++g) {
    node::PodMigClaim claim{"ns/p" + std::to_string(g), "uid-" + std::to_string(g), {}};
    for (uint32_t s = 0; s < 7; ++s) {
      codec::MigAllocation a;
      a.device_index = static_cast<int>(s);
      a.gpu_uuid = "GPU-" + std::to_string(g);
      a.profile = "1g.10gb";
      a.placement = {s, 1};
      claim.allocations.push_back(a);
    }
    if (!b.mig->Realize(claim, 0, claims).ok()) state.SkipWithError("realize failed");
    claims.claims.push_back(claim);
  }
  for (auto _ : state) {
    auto report = b.mig->Reconcile(claims, kFreshView);
    if (report.kept != 56) state.SkipWithError("expected 56 kept instances");
  }
}
BENCHMARK(BM_ReconcileEightGpusSevenInstances)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera
