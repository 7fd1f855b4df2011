// Running pods with arbitrary hami.io/vgpu-devices-allocated and hami.io/vgpu-mig-allocations
// are adopted as the informer and the simulator adopt them, then new pods are scheduled.
// Invariant (issue 14): whatever the running pods' annotations say, no new decision places a
// pod on a GPU that a running pod names in an annotation that does not decode, over a shared
// GPU's memory or task count, or on MIG slices that a running pod's readable allocation holds;
// and no decision takes the namespace past its GPU memory quota.
// Input: lines "<devices-allocated>\t<mig-allocations>", one running pod each (at most 3).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/codec/node_register.h"
#include "core/mig/catalog.h"
#include "core/model/annotations.h"
#include "core/sched/explain.h"
#include "core/sched/scheduler.h"
#include "core/state/cluster_state.h"

namespace {

namespace ann = tessera::model::annotations;
using tessera::model::GpuDevice;

GpuDevice SharedGpu() {
  GpuDevice d;
  d.uuid = "GPU-s";
  d.count = 10;
  d.total_mem_mib = 8000;
  d.total_cores = 100;
  d.type = "NVIDIA-Tesla T4";
  d.healthy = true;
  return d;
}

GpuDevice MigGpu() {
  static const auto catalog = tessera::mig::GpuModelCatalog::Builtin();
  const auto* spec = catalog.value().Find("RTX-PRO-6000-Blackwell-96GB");
  GpuDevice d;
  d.uuid = "GPU-m";
  d.index = 1;
  d.count = 4;
  d.total_mem_mib = spec->memory_mib;
  d.total_cores = 100;
  d.type = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
  d.mode = "mig";
  d.healthy = true;
  d.mig_profiles = spec->profiles;
  return d;
}

tessera::model::Pod NewPod(int i, bool mig) {
  tessera::model::Pod p;
  p.ns = "team";
  p.name = "new-" + std::to_string(i);
  p.uid = "uid-new-" + std::to_string(i);
  tessera::model::Container c;
  c.name = "c0";
  c.limits = {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", mig ? "8000" : "3000"}};
  p.containers.push_back(c);
  if (mig) p.annotations[std::string(ann::kVgpuMode)] = "mig";
  return p;
}

[[noreturn]] void Violation(const std::string& what) {
  std::fprintf(stderr, "invariant violated: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  tessera::state::ClusterState state{tessera::config::SchedulerConfig{}};
  tessera::model::Node node;
  node.name = "n1";
  node.annotations[std::string(ann::kNodeRegister)] =
      tessera::codec::EncodeNodeRegister({SharedGpu(), MigGpu()});
  state.UpsertNode(node);
  constexpr int64_t kQuotaMiB = 40000;
  state.UpsertQuota({"team", "gpu", {{"limits.nvidia.com/gpumem", std::to_string(kQuotaMiB)}}});

  std::vector<tessera::state::PodReservation> all;  // every pod's reservation, running and new
  size_t start = 0;
  for (int i = 0; i < 3 && start < input.size(); ++i) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    const std::string_view line = input.substr(start, end - start);
    start = end + 1;
    const size_t tab = line.find('\t');
    tessera::model::Pod pod;
    pod.ns = "team";
    pod.name = "running-" + std::to_string(i);
    pod.uid = "uid-running-" + std::to_string(i);
    pod.node_name = "n1";
    pod.phase = "Running";
    pod.annotations[std::string(ann::kAssignedNode)] = "n1";
    pod.annotations[std::string(ann::kDevicesAllocated)] = std::string(line.substr(0, tab));
    if (tab != std::string_view::npos) {
      pod.annotations[std::string(ann::kMigAllocations)] = std::string(line.substr(tab + 1));
    }
    auto r = tessera::state::ClusterState::ReservationFromAnnotations(pod);
    if (!r.ok()) Violation("adoption failed instead of holding: " + r.error().message);
    if (!r.value()) continue;
    all.push_back(*r.value());
    state.AddPod(std::move(*r.value()));
  }

  tessera::sched::Scheduler scheduler(state, tessera::sched::PolicyDefaults{});
  for (int i = 0; i < 6; ++i) {
    const tessera::sched::Decision d = scheduler.Schedule(NewPod(i, i % 2 == 1), nullptr, 1);
    if (!d.scheduled()) continue;
    int64_t team_mem = 0;
    for (const auto& r : all) team_mem += tessera::state::QuotaUseOf(r.devices, r.num_init).mem;
    const int64_t new_mem =
        tessera::state::QuotaUseOf(d.reservation.devices, d.reservation.num_init).mem;
    if (team_mem + new_mem > kQuotaMiB) {
      Violation("quota exceeded: " + std::to_string(team_mem) + " MiB held + " +
                std::to_string(new_mem) + " > " + std::to_string(kQuotaMiB));
    }
    for (const auto& slot : d.containers) {
      for (const auto& g : slot) {
        int64_t mem = 0;
        int tasks = 0;
        for (const auto& r : all) {
          for (const auto& h : r.held_gpus) {
            if (h == g.uuid) Violation("placed on " + g.uuid + ", which " + r.key + " holds whole");
          }
          for (const auto& c : r.devices) {
            for (const auto& e : c) {
              if (e.uuid != g.uuid) continue;
              mem += e.used_mem;
              ++tasks;
            }
          }
          for (const auto& m : r.mig) {
            if (m.gpu_uuid == g.uuid && !g.mig_profile.empty() &&
                m.placement.Overlaps(g.placement)) {
              Violation(g.uuid + " slices at " + std::to_string(g.placement.start) +
                        " overlap what " + r.key + " holds");
            }
          }
        }
        if (g.mig_profile.empty() && (mem + g.mem > 8000 || tasks + 1 > 10)) {
          Violation(g.uuid + " over capacity: " + std::to_string(mem) + " MiB held + " +
                    std::to_string(g.mem));
        }
      }
    }
    all.push_back(d.reservation);
  }
  // Explaining changes nothing, agrees with the filter on whether the pod fits, and a remedy it
  // names really admits the pod.
  for (int i = 6; i < 8; ++i) {
    const tessera::model::Pod probe = NewPod(i, i % 2 == 1);
    const size_t pods_before = state.pods().size();
    const tessera::sched::Explanation e =
        tessera::sched::ExplainPod(state, probe, tessera::sched::PolicyDefaults{});
    if (state.pods().size() != pods_before) Violation("explain changed the state");
    if (!e.error.empty() || e.passthrough) continue;
    if (e.fits != scheduler.Evaluate(probe, nullptr, 1).scheduled()) {
      Violation("explain and the filter disagree on " + probe.Key());
    }
    if (!e.remedy) continue;
    tessera::state::ClusterState what_if = state.Subset({e.remedy->node});
    for (const auto& key : e.remedy->pods) (void)what_if.RemovePod(key);
    tessera::sched::Scheduler check(what_if, tessera::sched::PolicyDefaults{});
    if (!check.Evaluate(probe, nullptr, 1).scheduled()) Violation("a remedy that does not admit");
  }
  return 0;
}
