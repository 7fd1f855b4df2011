// The scheduler's view in memory, per bound pod (issues 41 and 42): 5 000 sharing nodes of 8
// GPUs and 40 000 bound pods (one 8000 MiB share each, HAMi's placement annotations), fed to a
// ClusterView as the informer feeds it. Measured as the heap in use (glibc's mallinfo2) after the
// nodes, and after the pods, once with pods a DaemonSet owns (the view keeps their devices only)
// and once with pods a ReplicaSet owns (it also keeps their specs, which /defrag places again
// from). Prints MiB and bytes per pod.
//
// Build and run (Release): ninja -C build/release tessera_view_memory_bench &&
// build/release/bench/tessera_view_memory_bench [PODS]

#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "bench_cluster.h"
#include "no_writes.h"
#include "scheduler/scheduler_service.h"

namespace tessera {
namespace {

size_t HeapInUse() { return mallinfo2().uordblks; }

struct Reading {
  size_t nodes = 0;  // bytes for the nodes
  size_t pods = 0;   // bytes for the pods
};

Reading Measure(int nodes, int pods, const std::string& controller) {
  NoWrites writer;
  const size_t start = HeapInUse();
  auto service = std::make_unique<scheduler::SchedulerService>(config::SchedulerConfig{},
                                                               scheduler::ServiceOptions{}, writer);
  for (int i = 0; i < nodes; ++i)
    service->view.UpsertNodeModel(MakeNode(NodeName(i), Kind::kSharing));
  service->view.SetSynced(true);
  const size_t with_nodes = HeapInUse();
  for (int k = 0; k < pods; ++k) {
    model::Pod pod = BoundSharingPod(k, nodes);
    pod.controller_kind = controller;
    pod.labels["app"] = "web-" + std::to_string(k % 50);
    service->view.UpsertPodModel(pod);
  }
  const size_t with_pods = HeapInUse();
  return {with_nodes - start, with_pods - with_nodes};
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  const int pods = argc > 1 ? std::atoi(argv[1]) : 40000;
  const int nodes = 5000;
  for (const char* controller : {"DaemonSet", "ReplicaSet"}) {
    const tessera::Reading r = tessera::Measure(nodes, pods, controller);
    std::printf("%-10s %d nodes: %.1f MiB (%.0f B/node); %d pods: %.1f MiB (%.0f B/pod)\n",
                controller, nodes, static_cast<double>(r.nodes) / (1 << 20),
                static_cast<double>(r.nodes) / nodes, pods, static_cast<double>(r.pods) / (1 << 20),
                static_cast<double>(r.pods) / pods);
  }
  return 0;
}
